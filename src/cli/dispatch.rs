//! `send-once dispatch KEY --approval FILE --payload FILE`: an approval made elsewhere
//! (the Node library's `approve()`, another review tool) checked exactly as Node's
//! `dispatch()` checks it, then sent through the same gates as `run`. The ledger can
//! be any store: no review queue is needed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use send_once::approval::{self, ApprovalError, DispatchError, DispatchRequest, Dispatched};
use send_once::ledger::canonical::JsValue;
use send_once::ledger::decision::Subject;
use send_once::ledger::{
    Access, Decision, DecisionOutcome, Ledger, LedgerLocation, Outcome, StoreError,
};
use send_once::ledger::{canonical, duration, jsjson, key, time};
use send_once::open::Open;
use send_once::provider::{CommandProvider, CommandReceipt, SendOptions, split_command};
use send_once::review::Review;
use send_once::review::recheck::run_recheck;
use send_once::text::visible_inline;

use super::ledger_arg::{by_or_default, open_ledger};
use super::ledger_arg::{
    given_or_default, parse_limit, settle_id, split_ledger, text_positional, unsettled,
};
use super::run::SendFlags;
use super::run::{Gates, RunProvider, report};
use super::{Exit, display_path, fail, print_json, read_text_arg};

pub fn dispatch_approval(args: &DispatchArgs) -> Exit {
    let (Some(approval_path), Some(payload_path)) = (&args.approval, &args.payload) else {
        return fail(
            Exit::Refused,
            "--approval needs --payload: the payload it approved",
        );
    };
    if approval_path.as_os_str() == "-" && payload_path.as_os_str() == "-" {
        return fail(
            Exit::Refused,
            "--approval - and --payload - cannot both be read from stdin; give one as a file",
        );
    }
    let outside = match read_outside(args, approval_path, payload_path) {
        Ok(outside) => outside,
        Err(message) => return fail(Exit::Refused, message),
    };
    let recheck_timeout = match parse_limit(&args.recheck_timeout, "--recheck-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let gates = Gates::of(&outside.options);
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(dispatch_outside(args, outside, recheck_timeout, gates))
}

/// An approval made elsewhere, the payload it approved and the send command, read and
/// checked before the ledger is touched.
struct Outside {
    approval: Value,
    payload: JsValue,
    recheck: Option<Vec<String>>,
    provider: CommandProvider,
    options: SendOptions,
}

/// Reads the approval and the payload, and builds the send command around the payload.
fn read_outside(
    args: &DispatchArgs,
    approval_path: &Path,
    payload_path: &Path,
) -> Result<Outside, String> {
    key::check_key(&args.key).map_err(|e| e.to_string())?;
    let approval_text = read_text_arg(approval_path, "approval")?;
    let approval: Value = serde_json::from_str(&approval_text).map_err(|e| {
        format!(
            "the approval {} is not JSON: {e}",
            display_path(approval_path)
        )
    })?;
    let payload_text = read_text_arg(payload_path, "payload")?;
    let payload = canonical::parse_json(&payload_text).map_err(|e| {
        format!(
            "the payload {} is not JSON: {e}",
            display_path(payload_path)
        )
    })?;
    check_hash_sees_all(&payload_text, &payload, payload_path)?;
    let recheck = args
        .recheck
        .as_deref()
        .map(|text| split_command("--recheck", text))
        .transpose()?;
    let (provider, options) =
        args.send
            .provider(&args.command, Some(payload_text.into_bytes()), None)?;
    Ok(Outside {
        approval,
        payload,
        recheck,
        provider,
        options,
    })
}

/// The bytes go to the send command, the hash is of what JSON.parse keeps: a name
/// given twice, or a `__proto__` the hash leaves out, would send what no
/// reviewer saw under an approval of what they did (R6).
fn check_hash_sees_all(
    payload_text: &str,
    payload: &JsValue,
    payload_path: &Path,
) -> Result<(), String> {
    if let Some(name) = send_once::review::duplicate_name(payload_text) {
        return Err(format!(
            "the payload {} names {:?} twice; its hash is of the last, a provider may read the first, so it is not sent under an approval: give each name once",
            display_path(payload_path),
            visible_inline(&name)
        ));
    }
    if let Some(number) = send_once::review::inexact_number(payload_text) {
        return Err(format!(
            "the payload {} has the number {number}, which its hash reads as another number (an integer beyond ±2^53, or out of range), so what is sent would not be what was approved; write it as a string",
            display_path(payload_path)
        ));
    }
    if holds_proto(&payload.to_serde()) {
        return Err(format!(
            "the payload {} has a member named __proto__, which its hash leaves out (JavaScript sets the prototype with it), so what is sent would not be what was approved; remove it",
            display_path(payload_path)
        ));
    }
    Ok(())
}

/// Opens the ledger, asks the queue and the log whether the approval may go out, sends
/// under it, and reports.
async fn dispatch_outside(
    args: &DispatchArgs,
    outside: Outside,
    recheck_timeout: Duration,
    gates: Gates,
) -> Exit {
    let ledger = match open_ledger(&args.ledger, Access::Create) {
        Ok(ledger) => ledger,
        Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
    };
    let payload_hash = canonical::hash_payload(&outside.payload);
    let review = match queue_of(&args.ledger) {
        Ok(review) => review,
        Err(exit) => return exit,
    };
    let run = OutsideRun {
        args,
        ledger: &ledger,
        approval: &outside.approval,
        payload_hash: &payload_hash,
        review: review.as_ref(),
    };
    match run.refusal().await {
        Ok(None) => {}
        Ok(Some(why)) => return run.refuse(&why).await,
        Err(exit) => return exit,
    }
    let provider = RunProvider::new(outside.provider);
    let recheck = outside
        .recheck
        .map(|argv| async move || run_recheck(&argv, recheck_timeout).await.map(Value::Object));
    let request = DispatchRequest {
        approval: &outside.approval,
        payload: &outside.payload,
        key: &args.key,
        meta: None,
        now: ledger.now(),
    };
    let key = args.key.as_str();
    let before = ledger.get(key).await.ok().flatten();
    let work = run.send(request, recheck, &provider, &outside.options);
    let dispatched = match super::interrupt::unless_signalled(work).await {
        Ok(dispatched) => dispatched,
        Err(signal) => {
            return super::interrupt::report(&ledger, &args.ledger, key, before, signal).await;
        }
    };
    run.log_outcome(&dispatched).await;
    run.report(dispatched, &provider, gates).await
}

/// A dispatch through an approval made elsewhere, once its ledger is open.
struct OutsideRun<'a> {
    args: &'a DispatchArgs,
    ledger: &'a Ledger,
    approval: &'a Value,
    payload_hash: &'a str,
    /// The ledger's review queue, when it keeps one.
    review: Option<&'a Review>,
}

impl OutsideRun<'_> {
    fn now(&self) -> String {
        self.ledger.iso_now()
    }

    /// Why the approval may not go out, before anything is claimed.
    async fn refusal(&self) -> Result<Option<String>, Exit> {
        let args = self.args;
        // The queue has the last word on a key it holds a draft of: a rejection, a
        // withdrawal or a missing approver is not undone by an approval made elsewhere.
        if let Some(review) = self.review {
            let refused = send_once::review::dispatch::outside_approval_refusal(
                review,
                &args.key,
                self.payload_hash,
            )
            .await
            .map_err(|e| fail(Exit::Refused, e))?;
            if refused.is_some() {
                return Ok(refused);
            }
        }
        // Then the log: this approval may have gone out before (A1).
        approval::used_before(
            self.ledger,
            &args.key,
            self.approval,
            matches!(args.ledger, LedgerLocation::Jsonl(_)),
        )
        .await
        .map_err(|e| super::output::fail_with(Exit::Refused, super::store_problem(&e)))
    }

    /// Logs the refusal and says why nothing was sent.
    async fn refuse(&self, why: &str) -> Exit {
        let decision = outside_dispatch_decision(
            &self.args.key,
            self.approval,
            self.now(),
            DecisionOutcome::Refused,
            "refused",
            Some(why),
        );
        log_decision(self.ledger, &self.args.ledger, &decision).await;
        fail(
            Exit::Refused,
            format!(
                "not sent: {why}. An approval made elsewhere does not override the review queue of this ledger; nothing was claimed or sent"
            ),
        )
    }

    /// Claims the key and sends under the approval.
    async fn send<C, CFut>(
        &self,
        request: DispatchRequest<'_>,
        recheck: Option<C>,
        provider: &RunProvider,
        options: &SendOptions,
    ) -> Result<Dispatched<CommandReceipt>, DispatchError>
    where
        C: FnOnce() -> CFut,
        CFut: Future<Output = Result<Value, String>>,
    {
        let args = self.args;
        // With a queue, it is asked again once the key is claimed (M2).
        // And the log is read again once the key is claimed, after this dispatch is
        // logged as begun: of two dispatchers of one approval, one sends (A2, A3).
        match self.review {
            Some(review) => {
                let guarded = send_once::review::dispatch::StillWanted {
                    inner: provider,
                    review,
                    by: send_once::review::dispatch::StillWantedBy::Outside {
                        key: &args.key,
                        payload_hash: self.payload_hash,
                    },
                };
                let once = approval::OneSend {
                    inner: &guarded,
                    ledger: self.ledger,
                    approval: self.approval,
                    by: by_or_default(None),
                };
                approval::dispatch_with(self.ledger, request, recheck, &once, options).await
            }
            None => {
                let once = approval::OneSend {
                    inner: provider,
                    ledger: self.ledger,
                    approval: self.approval,
                    by: by_or_default(None),
                };
                approval::dispatch_with(self.ledger, request, recheck, &once, options).await
            }
        }
    }

    /// Logs what a dispatch that reached the ledger came to.
    async fn log_outcome(&self, dispatched: &Result<Dispatched<CommandReceipt>, DispatchError>) {
        let Ok(Dispatched::Ledger(outcome)) = dispatched else {
            return;
        };
        let (changed, what) = match outcome {
            Outcome::Duplicate { .. } => (DecisionOutcome::Unchanged, "duplicate"),
            Outcome::Sent { .. } => (DecisionOutcome::Changed, "sent"),
            Outcome::Confirmed { .. } => (DecisionOutcome::Changed, "confirmed"),
            Outcome::Unknown { .. } => (DecisionOutcome::Changed, "unknown"),
            // Stopped before the send because the queue closed the draft: the
            // dispatch was refused, and nothing went out (L1).
            Outcome::Failed { error, .. } if send_once::approval::stopped_before_send(error) => {
                (DecisionOutcome::Refused, "not sent")
            }
            Outcome::Failed { .. } => (DecisionOutcome::Changed, "failed"),
        };
        let decision = outside_dispatch_decision(
            &self.args.key,
            self.approval,
            self.now(),
            changed,
            what,
            None,
        );
        log_decision(self.ledger, &self.args.ledger, &decision).await;
    }

    /// Reports the dispatch: the send's outcome, or why the approval did not hold.
    async fn report(
        &self,
        dispatched: Result<Dispatched<CommandReceipt>, DispatchError>,
        provider: &RunProvider,
        gates: Gates,
    ) -> Exit {
        let args = self.args;
        let key = args.key.as_str();
        let started = || super::run::Started {
            not_started: provider.not_started(),
            returned: provider.returned(),
        };
        match dispatched {
            Ok(Dispatched::Ledger(outcome)) => report(
                &args.ledger,
                args.json,
                key,
                Ok(outcome),
                started(),
                gates.at(self.ledger),
            ),
            Ok(refused) => self.report_refused(&refused).await,
            Err(DispatchError::Approval(ApprovalError::RecheckFailed(reason))) => fail(
                Exit::Refused,
                format!(
                    "not sent: could not check the facts for {}: {}",
                    visible_inline(key),
                    visible_inline(&reason)
                ),
            ),
            Err(DispatchError::Approval(e)) => fail(Exit::Refused, format!("not sent: {e}")),
            Err(DispatchError::Ledger(e)) => report(
                &args.ledger,
                args.json,
                key,
                Err(e),
                started(),
                gates.at(self.ledger),
            ),
            // A kind of error this binary does not know may have come after the send:
            // a person must check (exit 3), the safe direction.
            Err(other) => fail(Exit::Unknown, other),
        }
    }

    /// An approval that did not hold: logged, and said why.
    async fn report_refused(&self, refused: &Dispatched<CommandReceipt>) -> Exit {
        let key = self.args.key.as_str();
        if let Some(decision) = send_once::review::dispatch::refusal_decision(
            refused,
            Subject::Key(key.to_owned()),
            None,
            self.now(),
        ) {
            log_decision(self.ledger, &self.args.ledger, &decision).await;
        }
        if self.args.json
            && let Some(json) = refused.refusal_json()
        {
            print_json(&json);
        }
        fail(Exit::Refused, refusal_text(refused, key))
    }
}

fn refusal_text<R>(refused: &Dispatched<R>, key: &str) -> String {
    let key = visible_inline(key);
    let text = match refused {
        Dispatched::Expired {
            expires_at,
            approved_at,
            ..
        } => format!(
            "not sent: the approval for {key} expired at {expires_at} ({}); it must be approved again",
            lasted(approved_at, expires_at)
        ),
        Dispatched::PayloadChanged {
            approved_hash,
            current_hash,
            ..
        } => format!(
            "not sent: the payload is not the one approved for {key} (approved {approved_hash}, this one {current_hash}); `send-once hash FILE` prints a payload's hash"
        ),
        Dispatched::StaleFacts { changed, .. } => format!(
            "not sent: facts changed since {key} was approved ({}); it must be approved again",
            changed_facts(changed)
        ),
        Dispatched::Ledger(_) => String::new(),
    };
    visible_inline(&text).into_owned()
}

/// Whether any object in `value` has a member named `__proto__`.
fn holds_proto(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(name, v)| name == "__proto__" || holds_proto(v)),
        Value::Array(items) => items.iter().any(holds_proto),
        _ => false,
    }
}

/// The review queue of the ledger at `location`, when it keeps one.
fn queue_of(location: &LedgerLocation) -> Result<Option<Review>, Exit> {
    if matches!(location, LedgerLocation::Jsonl(_)) {
        return Ok(None);
    }
    match location.open_queue(Access::ReadWrite) {
        Ok(queue) => Ok(Some(Review::new(queue, super::ledger_arg::clock()))),
        Err(StoreError::NoReviewQueue(_)) => Ok(None),
        Err(e) => Err(super::output::fail_with(
            Exit::Refused,
            super::store_problem(&e),
        )),
    }
}

/// The decision a dispatch through an approval made elsewhere leaves in the log, by
/// whoever runs this command (see [`approval::dispatch_decision`]).
fn outside_dispatch_decision(
    key: &str,
    approval: &Value,
    at: String,
    outcome: DecisionOutcome,
    what: &str,
    refused: Option<&str>,
) -> Decision {
    approval::dispatch_decision(
        key,
        approval,
        at,
        by_or_default(None),
        outcome,
        what,
        refused,
    )
}

/// Appends `decision` to the ledger's log, where the ledger exists: a refusal creates
/// no ledger (a JSON Lines file is made by its first entry, and a refused dispatch
/// writes none), as the Node library's refusals touch nothing. A failure is a
/// warning: what it records already happened.
async fn log_decision(ledger: &Ledger, location: &LedgerLocation, decision: &Decision) {
    if let LedgerLocation::Jsonl(path) = location
        && !path.exists()
    {
        return;
    }
    match ledger.store().append_decision(decision).await {
        Ok(()) | Err(StoreError::Unsupported(_)) => {}
        Err(e) => eprintln!(
            "send-once: warning: the dispatch could not be written to the decision log: {}",
            visible_inline(&e.to_string())
        ),
    }
}

/// How long an approval lasted, for "expired at …": "12h after it was given".
pub fn lasted(approved_at: &str, expires_at: &str) -> String {
    match (time::parse_date(approved_at), time::parse_date(expires_at)) {
        (Some(from), Some(to)) => format!(
            "{} after it was given",
            duration::format_duration((to - from) as f64)
        ),
        _ => format!("it was given at {approved_at}"),
    }
}

/// The facts that moved since an approval, "fact: before -> after; …".
pub fn changed_facts(changed: &[send_once::approval::FactChange]) -> String {
    changed
        .iter()
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c.fact,
                jsjson::stringify(&c.before),
                jsjson::stringify(&c.after)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once dispatch [LEDGER] <ID> [OPTIONS] -- <COMMAND>...")]
pub struct DispatchArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id; with --approval, the send key instead
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    #[command(flatten)]
    pub send: SendFlags,
    /// An approval made elsewhere (the Node library's approve(), another review tool):
    /// then the positional is the send key, not a draft id, and any ledger works
    #[arg(long, value_name = "FILE", requires = "payload")]
    pub approval: Option<PathBuf>,
    /// With --approval: the payload it approved (a JSON file, or -), checked against
    /// its hash and given to the send command on stdin
    #[arg(long, value_name = "FILE", requires = "approval")]
    pub payload: Option<PathBuf>,
    /// With --approval: a command printing the current facts as a JSON object, checked
    /// against the approval's facts (a draft uses its own recheck command)
    #[arg(long, value_name = "CMD", requires = "approval")]
    pub recheck: Option<String>,
    #[arg(skip)]
    pub key: String,
    /// Kill the draft's recheck command after this long
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    pub recheck_timeout: String,
    /// Print the refusal or the outcome as JSON
    #[arg(long)]
    pub json: bool,
    /// The send command and its arguments, after --
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl DispatchArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        if self.approval.is_none() {
            (self.ledger, self.id) = settle_id(&self.positionals)?;
            return Ok(());
        }
        let (ledger, rest) = split_ledger(&self.positionals, 1);
        let [key] = rest else {
            return Err(
                "with --approval, give the key to send, after the ledger if it is not the default one"
                    .to_owned(),
            );
        };
        self.key = text_positional(key, "the key")?;
        self.ledger = given_or_default(ledger)?;
        Ok(())
    }
}
