//! What a provider is, as the ledger calls it: the gates of a send. [`Provider`] (a
//! precheck, the send, a verify), what a check answers ([`CheckAnswer`]), and the
//! options a send is made with ([`SendOptions`]). They are the ledger's, as the
//! [`Store`](super::Store) trait is: `once_with` is written against them, and the
//! providers that implement them (a command, a mailer, in `crate::provider`) sit above.

mod options;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{Entry, Receipt, SendContext, SendError};
use crate::text::visible_inline;

pub use options::{OptionsError, SendOptions, SendOptionsBuilder};

/// Where a send goes: something that can send, and may be able to say whether a send
/// already happened.
///
/// Only `send` is required. A provider that cannot look up its own records keeps the
/// default `precheck` and `verify`, which answer inconclusive: with
/// [`SendOptions::precheck`] on that refuses the send, with [`SendOptions::verify`] on
/// it leaves an uncertain send pending. Both are the safe direction.
#[async_trait]
pub trait Provider: Send + Sync {
    /// What a send returns, as the ledger records it.
    type Receipt: Receipt + Send;

    /// Asked before a key is claimed: is this send already in the provider's records?
    /// `entry` is the entry as it would be claimed (its attempt is the attempt the send
    /// would be).
    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        let _ = entry;
        CheckAnswer::inconclusive("this provider has no precheck")
    }

    /// Makes the send for one attempt. [`SendError::Definite`] when the provider
    /// certainly did not take it, [`SendError::Uncertain`] when it may have.
    async fn send(&self, context: SendContext) -> Result<Self::Receipt, SendError>;

    /// Asked about a pending entry (after an uncertain send, on a rerun of a pending
    /// key, by a reconciler): did it happen?
    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        let _ = entry;
        CheckAnswer::inconclusive("this provider has no verify")
    }
}

/// What a check command said about one send.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckAnswer {
    /// The provider has it: exit 0 with a JSON object.
    Happened {
        /// From `providerId`, `messageId`, `id` or `sid` (the first non-empty string),
        /// when that is one short plain line.
        provider_id: Option<String>,
        /// Why the id field that was there was not taken as an id (several lines,
        /// control or invisible characters, too long), for the person to be told.
        id_problem: Option<String>,
        /// The object the command printed, as JavaScript's `JSON.parse` reads it.
        evidence: Map<String, Value>,
    },
    /// The provider has no record of it: exit 1.
    NotThere,
    /// Neither: the check could not say.
    Inconclusive {
        /// Why, as a sentence a person reads; control, bidi and invisible characters
        /// from the command's output are already made visible.
        why: String,
    },
}

impl CheckAnswer {
    /// An inconclusive answer; `why` is made visible here, so it is safe to print.
    pub fn inconclusive(why: impl AsRef<str>) -> CheckAnswer {
        CheckAnswer::Inconclusive {
            why: visible_inline(why.as_ref()).into_owned(),
        }
    }

    /// "happened", "not there" or "inconclusive".
    pub fn name(&self) -> &'static str {
        match self {
            CheckAnswer::Happened { .. } => "happened",
            CheckAnswer::NotThere => "not there",
            CheckAnswer::Inconclusive { .. } => "inconclusive",
        }
    }
}

/// Which check is asked, for its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// Before a claim: is it already there?
    Precheck,
    /// About a pending entry: did it happen?
    Verify,
}

impl CheckKind {
    /// "the precheck command" or "the verify command".
    pub fn command_name(self) -> &'static str {
        match self {
            CheckKind::Precheck => "the precheck command",
            CheckKind::Verify => "the verify command",
        }
    }
}

/// A time limit, and how it is written in messages ("timed out after 30s"): as the
/// person wrote it on the command line, or as [`Limit::new`] spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// How long.
    pub after: Duration,
    /// How it reads in a message.
    pub written: String,
}

impl Limit {
    /// A limit spelt in the largest unit that divides it: "500ms", "30s", "15m", "2h"
    /// (a limit that is not whole seconds in milliseconds, rounded down).
    pub fn new(after: Duration) -> Limit {
        let ms = after.as_millis();
        let s = after.as_secs();
        let written = if after.subsec_nanos() != 0 || s == 0 {
            format!("{ms}ms")
        } else if s.is_multiple_of(86_400) {
            format!("{}d", s / 86_400)
        } else if s.is_multiple_of(3_600) {
            format!("{}h", s / 3_600)
        } else if s.is_multiple_of(60) {
            format!("{}m", s / 60)
        } else {
            format!("{s}s")
        };
        Limit { after, written }
    }

    /// A limit as the person wrote it (`--timeout 2.5s`), so messages quote them.
    pub fn written(after: Duration, text: impl Into<String>) -> Limit {
        Limit {
            after,
            written: text.into(),
        }
    }
}
