//! Asking the provider: the check protocol behind `--precheck` and `--verify`, the
//! stable Message-ID a sender and a verifier share, and the [`Provider`] a send goes
//! through (precheck, send, verify), with a command-backed one.
//!
//! # The check protocol (one for precheck and verify)
//!
//! A check command (split into words as a shell would, by [`split_command`], and run
//! without a shell, in its own process group, with a time limit that kills the whole
//! group) gets in its environment:
//!
//! - `SEND_ONCE_KEY`: the send key;
//! - `SEND_ONCE_ATTEMPT`: the attempt the entry is at (for a precheck, the attempt the
//!   send would be);
//! - `SEND_ONCE_MESSAGE_ID`: [`message_id`] of the key, which send commands get too, so
//!   a sender can set it as the e-mail's `Message-ID` and a verifier can search for
//!   exactly that (Gmail's `rfc822msgid:`) instead of guessing by subject;
//!
//! and the entry as JSON on stdin, as the ledger holds it (its `meta` has channel, to
//! and intent). What it answers is a [`CheckAnswer`]:
//!
//! - exit 0 and a JSON object on stdout (at most [`MAX_EVIDENCE`] bytes): **it
//!   happened**. The provider id is the first non-empty string among `providerId`,
//!   `messageId`, `id` and `sid`, as for sends, when it is one short plain line; the
//!   object is the evidence, kept as the entry's result. An empty object, or one with
//!   a top-level `error` or `errors` field (a provider's error body, not a record), is
//!   inconclusive;
//! - exit 1: **not there**. Right after an uncertain send this proves nothing
//!   (a provider's records lag), so it never makes a send happen again by itself;
//! - anything else (another status, a signal, a timeout, output that is not one JSON
//!   object, output too big, a command that cannot start): **inconclusive**, with a
//!   sentence that says why, safe to print.
//!
//! A check command is never read from the ledger: whoever writes a ledger must not
//! choose what operators run.

mod check;
mod command;
mod mail;
mod mail_once;
mod message_id;
pub mod reconcile;

pub use check::{CheckCommand, MAX_EVIDENCE, provider_id_in, why_not_an_id};
pub use command::{
    CommandProvider, CommandReceipt, CommandSendError, DEFAULT_CHECK_TIMEOUT, split_command,
};
pub use mail::{
    DEFAULT_WINDOW_HOURS, MAX_BODY_BYTES, Mail, MailError, MailProvider, MailReceipt, Mailer,
    SendAnswer, SentMessage, SentSearch, TRIAGE_MAX, addresses_in, normalise_subject, same_subject,
    why_not_an_address,
};
pub use mail_once::{MailOutcome, SETTLED_BY, message_json, send_mail_once, send_mail_once_unless};
pub use message_id::message_id;
pub use reconcile::{ReconcileOptions, reconcile};

// What a provider is, as the ledger calls it, is the ledger's (`ledger::provider`):
// named here too, where the providers are.
pub use crate::ledger::provider::{
    CheckAnswer, CheckKind, Limit, OptionsError, Provider, SendOptions, SendOptionsBuilder,
};
