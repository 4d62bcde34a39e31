//! What one send asks of the ledger and the provider besides the send itself.

use std::time::Duration;

use serde_json::{Map, Value};

/// How one send is gated: its meta, whether the provider is asked before (precheck)
/// and after (verify), how long to wait for another process's claim, and when a
/// pending claim may be taken over. Built with [`SendOptions::builder`]; the default
/// is today's `once`: no meta, no checks, no wait, no takeover.
///
/// # The decision table
///
/// This is what `once` with options must do (issue 11, SPEC §5). Nothing is ever sent
/// again on a guess: the only ways to a second attempt are a definite failure (as
/// today) and a takeover that verify allowed. "Sent, not sent now" means the entry is
/// settled sent from the provider's answer by compare-and-set, with the answer's
/// provider id and its evidence as the entry's `result`, and a decision-log record
/// naming the gate (precheck or verify) and the answer; the send is not called.
///
/// **1. The key is read first.** A bad key is refused before anything is asked.
///
/// | ledger has the key as | what happens |
/// |---|---|
/// | sent | duplicate (exit 0, printing what the first send recorded); nothing is asked, precheck included |
/// | pending | step 2 |
/// | failed, or nothing | step 3 |
///
/// **2. A pending key** (another process's claim, or an earlier attempt that ended
/// uncertain or crashed).
///
/// 2a. `wait` (`--wait D`): only while the claim is *in flight* (its attempt has not
/// ended: no `error` recorded for it) the entry is re-read until it changes or D has
/// passed:
///
/// | after waiting | what happens |
/// |---|---|
/// | sent | duplicate (exit 0, printing what the first send recorded) |
/// | failed | step 3: this run may claim it |
/// | still pending, or pending from the start but its attempt already ended | 2b |
///
/// 2b. `verify` (`--verify CMD`) is asked about the pending entry as read:
///
/// | verify says | `stale_after` | what happens |
/// |---|---|---|
/// | happened | any | sent, not sent now (exit 0) |
/// | not there | given, and the claim (`claimedAt`) is older than it | taken over: the pending entry becomes the next attempt by compare-and-set on the attempt verify was asked about; exactly one of many racing processes wins and goes to step 4 (precheck is not asked again: verify just answered); a loser re-reads and starts again at step 1 |
/// | not there | given, the claim is younger | unknown (exit 3); nothing changes |
/// | not there | not given | unknown (exit 3); nothing is ever taken over without `stale_after` |
/// | inconclusive | any | unknown (exit 3), the reason shown; nothing changes |
/// | (verify off) | (refused by the builder) | unknown (exit 3), as today |
///
/// **3. A key that may be claimed** (failed, or never claimed). `precheck`
/// (`--precheck CMD`) is asked about the entry as it would be claimed (attempt = the
/// next attempt), before the claim:
///
/// | precheck says | what happens |
/// |---|---|
/// | happened | sent, not sent now (exit 0); the entry is written sent (a new entry, or the failed one by compare-and-set) |
/// | not there | claim, then step 4 |
/// | inconclusive | refused (exit 2), the reason shown; the ledger unchanged |
/// | (precheck off) | claim, then step 4, as today |
///
/// The claim is still a compare-and-set: when another process claimed the key between
/// the precheck and the claim, the claim's answer (duplicate, unknown) is the outcome.
///
/// **4. The send.** It runs once; its result is recorded as today:
///
/// | the send | `verify` | what happens |
/// |---|---|---|
/// | returned | any | sent (exit 0) |
/// | failed definitely | any | failed (exit 1; a command that never started: exit 2) |
/// | uncertain | on | verify is asked at once instead of any retry: happened → sent, not sent again (exit 0); not there or inconclusive → stays pending (exit 3): a provider's records lag, so "not there" right after a send proves nothing |
/// | uncertain | off | stays pending (exit 3), as today |
///
/// A store error before the send returns that error and nothing is sent; after it,
/// the entry stays pending (`Unrecorded`), as today. A settlement from an answer that
/// loses its compare-and-set (someone resolved the entry meanwhile) changes nothing and
/// reports what the entry now is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SendOptions {
    meta: Option<Map<String, Value>>,
    precheck: bool,
    verify: bool,
    wait: Option<Duration>,
    stale_after: Option<Duration>,
    limit: Option<Duration>,
    on_behalf_of: Option<String>,
}

impl SendOptions {
    /// Starts from the default: no meta, no checks, no wait, no takeover.
    pub fn builder() -> SendOptionsBuilder {
        SendOptionsBuilder {
            options: SendOptions::default(),
        }
    }

    /// Stored with the entry, for the audit (channel, to, intent).
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.meta.as_ref()
    }

    /// The same options with `meta` stored with the entry instead.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> SendOptions {
        self.meta = Some(meta);
        self
    }

    /// Ask the provider's precheck before claiming (step 3).
    pub fn precheck(&self) -> bool {
        self.precheck
    }

    /// Ask the provider's verify after an uncertain send and about a pending key
    /// (steps 2b and 4).
    pub fn verify(&self) -> bool {
        self.verify
    }

    /// How long to wait for another process's in-flight claim (step 2a).
    pub fn wait(&self) -> Option<Duration> {
        self.wait
    }

    /// How old a pending claim must be before a "not there" from verify lets it be
    /// taken over (step 2b).
    pub fn stale_after(&self) -> Option<Duration> {
        self.stale_after
    }

    /// The send's own time limit, past which it is killed: recorded with the claim, so
    /// that no other process's flags can take it over while it may still run.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// Who the send is made for (a person, a job): named with the check in the
    /// decision log when a check's answer settles an entry ("verify (dana)").
    pub fn on_behalf_of(&self) -> Option<&str> {
        self.on_behalf_of.as_deref()
    }
}

/// Builds [`SendOptions`], refusing combinations that cannot mean what they say.
#[derive(Clone, Debug)]
pub struct SendOptionsBuilder {
    options: SendOptions,
}

impl SendOptionsBuilder {
    /// Meta stored with the entry.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.options.meta = Some(meta);
        self
    }

    /// Ask the provider before claiming.
    pub fn precheck(mut self, on: bool) -> Self {
        self.options.precheck = on;
        self
    }

    /// Ask the provider after an uncertain send and about a pending key.
    pub fn verify(mut self, on: bool) -> Self {
        self.options.verify = on;
        self
    }

    /// Wait up to `limit` for another process's in-flight claim.
    pub fn wait(mut self, limit: Duration) -> Self {
        self.options.wait = Some(limit);
        self
    }

    /// The send is killed at `limit`: recorded with the claim, so no other process
    /// takes it over before then, whatever its own `stale_after`.
    pub fn limit(mut self, limit: Duration) -> Self {
        self.options.limit = Some(limit);
        self
    }

    /// Take over a pending claim older than `age` when verify says not there (and
    /// its claimer's limit has passed, or with none, its claimer is gone).
    pub fn stale_after(mut self, age: Duration) -> Self {
        self.options.stale_after = Some(age);
        self
    }

    /// Who the send is made for, named in the decisions a check's answer writes.
    pub fn on_behalf_of(mut self, who: impl Into<String>) -> Self {
        self.options.on_behalf_of = Some(who.into());
        self
    }

    /// The options, or why they cannot be used.
    pub fn build(self) -> Result<SendOptions, OptionsError> {
        let options = self.options;
        if options.stale_after.is_some() && !options.verify {
            return Err(OptionsError::StaleWithoutVerify);
        }
        if options.stale_after.is_some_and(|d| d.is_zero()) {
            return Err(OptionsError::Zero("--stale-after"));
        }
        if options.wait.is_some_and(|d| d.is_zero()) {
            return Err(OptionsError::Zero("--wait"));
        }
        Ok(options)
    }
}

/// Why [`SendOptionsBuilder::build`] refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// A takeover is allowed only on verify's word.
    #[error(
        "--stale-after needs --verify: a pending send is taken over only when the provider says it is not there"
    )]
    StaleWithoutVerify,
    /// A zero limit would mean "do not", which leaving it out already says.
    #[error("{0} must be longer than zero")]
    Zero(&'static str),
}
