//! Why the ledger refused or failed: each error names the key, the entry as it is, and
//! whether calling again is safe.

use super::store::StoreError;
use super::verified::Found;

/// Why a ledger call did not come to an [`Outcome`](super::Outcome).
///
/// No error leaves a send to be repeated on a guess, so calling `once` again after
/// one is safe. Most come before the claim or the send (nothing was sent);
/// [`LedgerError::Unrecorded`] means the send ran and its result could not be
/// written, so the entry stays pending for a person to settle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The key was empty.
    #[error("a key must be a non-empty string")]
    EmptyKey,
    /// A note longer than [`super::decision::MAX_NOTE_BYTES`] (its length in bytes).
    #[error("a note is at most {most} bytes (this one is {0}); nothing was changed", most = super::decision::MAX_NOTE_BYTES)]
    NoteTooLong(usize),
    /// The key is refused for a new claim (see [`super::key::check_key`]).
    #[error(transparent)]
    BadKey(#[from] super::key::BadKey),
    /// No entry has this key (or, for [`Ledger::find`](super::Ledger::find), starts with it).
    #[error("No entry for {0}.")]
    NotFound(String),
    /// A sent entry cannot be resolved failed: failed means "may be sent again".
    #[error(
        "{0} is recorded as sent. It cannot be marked failed, because a failed entry may be sent again."
    )]
    AlreadySent(String),
    /// Resetting a sent entry needs `force`: it lets the send happen again.
    #[error(
        "{0} is recorded as sent. Resetting it lets it be sent again; if that is what you want, use --force."
    )]
    ResetSentNeedsForce(String),
    /// Marking failed (a reset, a resolve failed) an attempt that may still be
    /// running ([`super::claimer::running`]) needs `even_if_running`: the next run would send
    /// it alongside.
    #[error(
        "{key}: attempt {attempt} is pending and {why}. Marked failed, the next run would send it alongside. Wait for it, or check with the provider; if you know it has stopped, say so with --even-if-running."
    )]
    MayStillRun {
        /// The key.
        key: String,
        /// The attempt that may still run.
        attempt: u64,
        /// Why it may ([`super::claimer::Running::describe`]).
        why: String,
    },
    /// Marking failed (a reset, a resolve failed) an attempt that a recorded verify
    /// found at the provider needs `even_if_found`: the next run would send it again.
    #[error(
        "{key}: attempt {attempt} is pending, and {}. Marked failed, the next run sends it a second time. If the provider has it, record it sent (resolve {key} sent{}); if its record is of another message, say so with --even-if-found.",
        .found.describe(),
        .found.provider_id.as_deref().map(|id| format!(" --provider-id {}", crate::text::visible_inline(id))).unwrap_or_default()
    )]
    FoundByVerify {
        /// The key.
        key: String,
        /// The attempt that was found.
        attempt: u64,
        /// Who found it, when, and the provider's id for it.
        found: Found,
    },
    /// A failed attempt a recorded verify found at the provider, which nobody went
    /// against: sent again, the provider would have it twice.
    #[error(
        "{key}: attempt {attempt} is recorded failed, but {}. Sent again, the recipient would have it twice, so it is not sent. If the provider has it, record it sent (resolve {key} sent --expect failed{}); if its record is of another message, say so (resolve {key} failed --even-if-found) and run again.",
        .found.describe(),
        .found.provider_id.as_deref().map(|id| format!(" --provider-id {}", crate::text::visible_inline(id))).unwrap_or_default()
    )]
    FailedButFound {
        /// The key.
        key: String,
        /// The attempt that was found.
        attempt: u64,
        /// Who found it.
        found: Found,
    },
    /// The prefix given to [`Ledger::find`](super::Ledger::find) matches several keys.
    #[error("{prefix} matches {} keys ({}). Give more of the key.", count_keys(.matches), list_keys(.matches))]
    AmbiguousKey {
        /// What was given.
        prefix: String,
        /// Some of the keys it matches (at most 11, which is enough to say "more than 10").
        matches: Vec<String>,
    },
    /// Pending is where an entry starts, not a decision.
    #[error("an entry can be resolved as sent or failed, not pending")]
    ResolveToPending,
    /// The entry is no longer what the person saw; their decision was not applied.
    #[error(
        "{key} changed after it was shown (as {seen}): it is now {now}, {change}. Nothing was changed; look again and decide on what it is now."
    )]
    ChangedSinceSeen {
        /// The entry's key.
        key: String,
        /// What the person saw (status, and attempt when known).
        seen: String,
        /// What it is now.
        now: String,
        /// Who changed it and when, made safe to print.
        change: String,
    },
    /// Other writers kept winning the compare-and-set, round after round; nothing was
    /// sent or changed by this call.
    #[error("gave up on {0}: it kept changing underneath")]
    Contended(String),
    /// The store said the key exists (a claim lost) but then had no entry for it:
    /// another tool deleted it meanwhile, or the store is broken. Nothing was sent.
    #[error("the store refused to claim {0} but has no entry for it")]
    StoreInconsistent(String),
    /// The send ran, but its result could not be written. The entry stays pending, so
    /// the next attempt says unknown instead of sending again.
    #[error(
        "the send for {key} ran, but its result could not be recorded ({source}); the entry stays pending and needs a person to check the provider"
    )]
    Unrecorded {
        /// The entry's key.
        key: String,
        /// Why the result could not be written.
        source: StoreError,
    },
    /// The precheck could not say whether the send already happened: not sent, and the
    /// ledger unchanged. When the tool cannot tell what already happened, it stops.
    #[error(
        "not sent: {why}. The precheck could not tell whether {key} already went out, so nothing was claimed or sent"
    )]
    PrecheckInconclusive {
        /// The send key.
        key: String,
        /// The check's reason, safe to print.
        why: String,
    },
    /// The store could not be read or written. The entry is as last written: a send
    /// that ran is left pending or sent, never failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub(super) fn count_keys(keys: &[String]) -> String {
    if keys.len() > PREFIX_MATCHES_SHOWN {
        format!("more than {PREFIX_MATCHES_SHOWN}")
    } else {
        keys.len().to_string()
    }
}

pub(super) fn list_keys(keys: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = keys
        .iter()
        .take(SHOWN)
        .map(|k| crate::text::visible_inline(k).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        text.push_str(", ...");
    }
    text
}

/// How many keys a prefix lookup asks the store for: enough to say "ambiguous".
pub(super) const PREFIX_MATCHES_SHOWN: usize = 10;
