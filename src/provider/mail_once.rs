//! The Gmail wrapper's three gates around one mail: the ledger, the Sent folder, and a
//! send that is never retried blind. `send-once mail` is this with flags.

use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use crate::ledger::{
    Entry, Ledger, LedgerError, Outcome, ResolveDetails, Seen, SendError, Status, key,
};

use super::mail::{Mail, MailReceipt, Mailer, SendAnswer, SentMessage, SentSearch};

/// Who the ledger records as having settled an ambiguous send it found in Sent.
pub const SETTLED_BY: &str = "send-once mail";

/// What happened to one mail, gate by gate.
#[derive(Debug)]
#[non_exhaustive]
pub enum MailOutcome {
    /// Gate 1: the ledger has it as sent. The mailer was not run.
    AlreadySent {
        /// The entry as the ledger holds it.
        entry: Entry,
    },
    /// Gate 1: the ledger has it pending (an earlier attempt's fate is unknown). The
    /// mailer was not run; a person must check.
    Pending {
        /// The entry as the ledger holds it.
        entry: Entry,
    },
    /// Gate 2: Sent already holds this mail (sent outside this tool, or by a run whose
    /// ledger is gone). Nothing claimed, nothing sent.
    InSent {
        /// The message found.
        message: SentMessage,
    },
    /// Gate 2: Sent could not be read, so what already happened cannot be known.
    /// Nothing claimed, nothing sent.
    CannotCheck {
        /// Why, safe to print.
        why: String,
    },
    /// A dry run that passed gates 1 and 2: this would be sent, as this attempt.
    WouldSend {
        /// The attempt the send would be.
        attempt: u64,
    },
    /// Gate 3: the mailer sent it and said so.
    Sent {
        /// The entry, recorded sent.
        entry: Entry,
        /// The mailer's message id, recorded as the provider id.
        message_id: String,
    },
    /// Gate 3: the send's answer was ambiguous, and Sent, searched again, holds it:
    /// recorded sent with the found message's id.
    Confirmed {
        /// The entry, recorded sent.
        entry: Entry,
        /// The message found.
        message: SentMessage,
        /// What was ambiguous about the send.
        ambiguity: String,
    },
    /// Gate 3: the mailer definitely did not send it. Recorded failed; a rerun may send.
    Failed {
        /// The entry, recorded failed.
        entry: Entry,
        /// Why, safe to print.
        why: String,
    },
    /// Gate 3: the send's answer was ambiguous and Sent does not show it (or could not
    /// be read). It stays pending, so a rerun never sends; a person must check.
    Unknown {
        /// The entry, pending.
        entry: Entry,
        /// What was ambiguous, and what the second search said.
        why: String,
    },
}

impl MailOutcome {
    /// A short name for `--json` and the spans.
    pub fn name(&self) -> &'static str {
        match self {
            MailOutcome::AlreadySent { .. } => "duplicate",
            MailOutcome::Pending { .. } => "pending",
            MailOutcome::InSent { .. } => "in_sent",
            MailOutcome::CannotCheck { .. } => "cannot_check",
            MailOutcome::WouldSend { .. } => "would_send",
            MailOutcome::Sent { .. } => "sent",
            MailOutcome::Confirmed { .. } => "sent",
            MailOutcome::Failed { .. } => "failed",
            MailOutcome::Unknown { .. } => "unknown",
        }
    }
}

/// Sends `mail` through `mailer` at most once for `key` (the op id, as written), behind
/// the wrapper's gates:
///
/// 1. **The ledger.** Sent: [`MailOutcome::AlreadySent`]; pending:
///    [`MailOutcome::Pending`]; neither runs the mailer.
/// 2. **Sent**, only when the ledger would send: a matching message is
///    [`MailOutcome::InSent`], a search that cannot say is [`MailOutcome::CannotCheck`];
///    neither claims anything. A dry run stops here with [`MailOutcome::WouldSend`].
/// 3. **The send**, through [`Ledger::once`] (claimed first, with [`Mail::meta`]): sent,
///    failed, or ambiguous. An ambiguous answer is never retried: Sent is searched
///    again, inside the same attempt, and a match is recorded sent by compare-and-set
///    on exactly that attempt (in the decision log, by [`SETTLED_BY`]); otherwise the
///    entry stays pending.
///
/// A bad key and store errors before the send are errors; after the send nothing is an
/// error that could read as "not sent".
pub async fn send_mail_once(
    ledger: &Ledger,
    key: &str,
    mailer: &Mailer,
    mail: &Mail,
    dry_run: bool,
) -> Result<MailOutcome, LedgerError> {
    send_mail_once_unless(ledger, key, mailer, mail, dry_run, async || None).await
}

/// [`send_mail_once`], asking `stopped` once the key is claimed and just before the
/// mailer sends: a reason there records the attempt as failed and sends nothing (the
/// command line asks the review queue again, as `run` does).
pub async fn send_mail_once_unless(
    ledger: &Ledger,
    key: &str,
    mailer: &Mailer,
    mail: &Mail,
    dry_run: bool,
    stopped: impl AsyncFn() -> Option<String>,
) -> Result<MailOutcome, LedgerError> {
    key::check_key(key)?;
    let span = tracing::info_span!("mail.ledger", key = %key, attempt = Empty, gate = "ledger", outcome = Empty);
    let existing = ledger.get(key).instrument(span.clone()).await?;
    let next_attempt = match &existing {
        Some(entry) => {
            span.record("attempt", entry.attempts());
            match entry.status() {
                Status::Sent => {
                    span.record("outcome", "already sent");
                    return Ok(MailOutcome::AlreadySent {
                        entry: entry.clone(),
                    });
                }
                Status::Pending => {
                    span.record("outcome", "pending");
                    return Ok(MailOutcome::Pending {
                        entry: entry.clone(),
                    });
                }
                Status::Failed => entry.attempts() + 1,
            }
        }
        None => 1,
    };
    span.record("outcome", "may send");
    drop(span);

    let span = tracing::info_span!("mail.precheck", key = %key, attempt = next_attempt, gate = "sent-folder", outcome = Empty);
    let search = mailer.find_in_sent(mail).instrument(span.clone()).await;
    match search {
        SentSearch::Found(message) => {
            span.record("outcome", "found");
            return Ok(MailOutcome::InSent { message });
        }
        SentSearch::Failed(why) => {
            span.record("outcome", "inconclusive");
            return Ok(MailOutcome::CannotCheck { why });
        }
        SentSearch::NotFound { .. } => span.record("outcome", "not there"),
    };
    drop(span);
    if dry_run {
        return Ok(MailOutcome::WouldSend {
            attempt: next_attempt,
        });
    }

    let span = tracing::info_span!("mail.send", key = %key, attempt = Empty, gate = "send", outcome = Empty);
    let outcome = ledger
        .once_within(
            key,
            Some(mail.meta(mailer.account.as_deref())),
            Some(mailer.timeout.after),
            |context| {
                let span = span.clone();
                let stopped = &stopped;
                async move {
                    span.record("attempt", context.attempt);
                    if let Some(why) = stopped().await {
                        return Err(SendError::definite(format!(
                            "{why}{}",
                            crate::approval::NOT_SENT
                        )));
                    }
                    match mailer.send(mail, &context).await {
                        SendAnswer::Sent { message_id } => Ok(MailReceipt { message_id }),
                        SendAnswer::Rejected(why) => Err(SendError::definite(why)),
                        SendAnswer::Ambiguous(why) => Err(SendError::uncertain(why)),
                    }
                }
            },
        )
        .instrument(span.clone())
        .await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            span.record("outcome", "error");
            return Err(e);
        }
    };
    span.record("outcome", outcome.name());
    drop(span);
    Ok(match outcome {
        // Another process claimed it between gate 1 and the claim.
        Outcome::Duplicate { entry } => MailOutcome::AlreadySent { entry },
        Outcome::Unknown {
            entry, error: None, ..
        } => MailOutcome::Pending { entry },
        Outcome::Sent { entry, result } => MailOutcome::Sent {
            entry,
            message_id: result.message_id,
        },
        Outcome::Failed { entry, error } => MailOutcome::Failed {
            entry,
            why: error.message().to_owned(),
        },
        Outcome::Unknown {
            entry,
            error: Some(error),
            ..
        } => verify(ledger, key, mailer, mail, entry, error).await,
        // `once` asks no provider check.
        Outcome::Confirmed { entry, .. } => MailOutcome::AlreadySent { entry },
    })
}

/// After an ambiguous send: search Sent again and settle this very attempt when the
/// mail is there.
async fn verify(
    ledger: &Ledger,
    key: &str,
    mailer: &Mailer,
    mail: &Mail,
    entry: Entry,
    error: SendError,
) -> MailOutcome {
    let span = tracing::info_span!("mail.verify", key = %key, attempt = entry.attempts(), gate = "sent-folder", outcome = Empty);
    let ambiguity = error
        .message()
        .strip_prefix(crate::ledger::UNKNOWN_PREFIX)
        .unwrap_or(error.message())
        .to_owned();
    let message = match mailer.find_in_sent(mail).instrument(span.clone()).await {
        SentSearch::Found(message) => message,
        SentSearch::NotFound { listed } => {
            span.record("outcome", "not there");
            return MailOutcome::Unknown {
                entry,
                why: format!(
                    "{ambiguity}; Sent, searched again, does not show it ({listed} messages to {} listed), which right after a send proves nothing",
                    mail.to()
                ),
            };
        }
        SentSearch::Failed(why) => {
            span.record("outcome", "inconclusive");
            return MailOutcome::Unknown {
                entry,
                why: format!("{ambiguity}; Sent could not be searched again: {why}"),
            };
        }
    };
    let provider_id = message
        .id
        .clone()
        .filter(|id| super::check::why_not_an_id(id).is_none());
    let details = ResolveDetails {
        by: Some(SETTLED_BY.to_owned()),
        note: Some(format!(
            "the send's answer was ambiguous ({ambiguity}); found in Sent: {}",
            message.describe()
        )),
        provider_id,
        seen: Some(Seen::entry(&entry)),
        evidence: None,
        even_if_running: false,
        even_if_found: false,
    };
    match ledger
        .resolve(key, Status::Sent, &details)
        .instrument(span.clone())
        .await
    {
        Ok(resolved) => {
            span.record("outcome", "found");
            MailOutcome::Confirmed {
                entry: resolved.entry,
                message,
                ambiguity,
            }
        }
        Err(e) => {
            span.record("outcome", "unrecorded");
            // Someone settled it first: what it is now is the answer.
            let now = match ledger.get(key).await {
                Ok(Some(now)) => now,
                _ => entry,
            };
            if now.status() == Status::Sent {
                return MailOutcome::AlreadySent { entry: now };
            }
            MailOutcome::Unknown {
                entry: now,
                why: format!(
                    "{ambiguity}; Sent shows it ({}), but that could not be recorded: {e}",
                    message.describe()
                ),
            }
        }
    }
}

/// The found message as JSON for `--json`: its id, date, subject and recipients.
pub fn message_json(message: &SentMessage) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("id".into(), message.id.clone().into());
    out.insert("date".into(), message.date.clone().into());
    out.insert("subject".into(), message.subject.clone().into());
    out.insert(
        "to".into(),
        message
            .to
            .clone()
            .map_or(Value::Null, |to| to.into_iter().map(Value::from).collect()),
    );
    Value::Object(out)
}
