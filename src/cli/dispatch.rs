//! `send-once dispatch KEY --approval FILE --payload FILE`: an approval made elsewhere
//! (the Node library's `approve()`, another review tool) checked exactly as Node's
//! `dispatch()` checks it, then sent through the same gates as `run`. The ledger can
//! be any store: no review queue is needed.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use send_once::approval::{self, ApprovalError, DispatchError, DispatchRequest, Dispatched};
use send_once::ledger::decision::Subject;
use send_once::ledger::{
    Access, Decision, DecisionOutcome, Ledger, LedgerLocation, Outcome, StoreError,
};
use send_once::ledger::{canonical, duration, jsjson, key, time};
use send_once::open::Open;
use send_once::provider::split_command;
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
    let prepared = (|| -> Result<_, String> {
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
        // The bytes go to the send command, the hash is of what JSON.parse keeps: a name
        // given twice, or a `__proto__` the hash leaves out, would send what no
        // reviewer saw under an approval of what they did (R6).
        if let Some(name) = send_once::review::duplicate_name(&payload_text) {
            return Err(format!(
                "the payload {} names {:?} twice; its hash is of the last, a provider may read the first, so it is not sent under an approval: give each name once",
                display_path(payload_path),
                visible_inline(&name)
            ));
        }
        if let Some(number) = send_once::review::inexact_number(&payload_text) {
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
        let recheck = args
            .recheck
            .as_deref()
            .map(|text| split_command("--recheck", text))
            .transpose()?;
        let (provider, options) =
            args.send
                .provider(&args.command, Some(payload_text.into_bytes()), None)?;
        Ok((approval, payload, recheck, provider, options))
    })();
    let (approval, payload, recheck, provider, options) = match prepared {
        Ok(prepared) => prepared,
        Err(message) => return fail(Exit::Refused, message),
    };
    let recheck_timeout = match parse_limit(&args.recheck_timeout, "--recheck-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let gates = Gates::of(&options);
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let ledger = match open_ledger(&args.ledger, Access::Create) {
            Ok(ledger) => ledger,
            Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
        };
        // The queue has the last word on a key it holds a draft of: a rejection, a
        // withdrawal or a missing approver is not undone by an approval made elsewhere.
        let at_now = || {
            send_once::ledger::time::iso_from_millis(ledger.now())
                .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
        };
        let payload_hash = canonical::hash_payload(&payload);
        let review = match queue_of(&args.ledger) {
            Ok(review) => review,
            Err(exit) => return exit,
        };
        let refusal = match &review {
            Some(review) => {
                send_once::review::dispatch::outside_approval_refusal(review, &args.key, &payload_hash)
                    .await
                    .map_err(|e| fail(Exit::Refused, e))
            }
            None => Ok(None),
        };
        // Then the log: this approval may have gone out before (A1).
        let refusal = match refusal {
            Ok(None) => approval::used_before(
                &ledger,
                &args.key,
                &approval,
                matches!(args.ledger, LedgerLocation::Jsonl(_)),
            )
                .await
                .map_err(|e| super::output::fail_with(Exit::Refused, super::store_problem(&e))),
            other => other,
        };
        match refusal {
            Ok(None) => {}
            Ok(Some(why)) => {
                let decision = outside_dispatch_decision(
                    &args.key,
                    &approval,
                    at_now(),
                    DecisionOutcome::Refused,
                    "refused",
                    Some(&why),
                );
                log_decision(&ledger, &args.ledger, &decision).await;
                return fail(
                    Exit::Refused,
                    format!(
                        "not sent: {why}. An approval made elsewhere does not override the review queue of this ledger; nothing was claimed or sent"
                    ),
                );
            }
            Err(exit) => return exit,
        }
        let provider = RunProvider::new(provider);
        let recheck = recheck
            .map(|argv| async move || run_recheck(&argv, recheck_timeout).await.map(Value::Object));
        let request = DispatchRequest {
            approval: &approval,
            payload: &payload,
            key: &args.key,
            meta: None,
            now: ledger.now(),
        };
        let key = args.key.as_str();
        let before = ledger.get(key).await.ok().flatten();
        // With a queue, it is asked again once the key is claimed (M2).
        // And the log is read again once the key is claimed, after this dispatch is
        // logged as begun: of two dispatchers of one approval, one sends (A2, A3).
        let work = async {
            match &review {
                Some(review) => {
                    let guarded = send_once::review::dispatch::StillWanted {
                        inner: &provider,
                        review,
                        by: send_once::review::dispatch::StillWantedBy::Outside {
                            key: &args.key,
                            payload_hash: &payload_hash,
                        },
                    };
                    let once = approval::OneSend {
                        inner: &guarded,
                        ledger: &ledger,
                        approval: &approval,
                        by: by_or_default(None),
                    };
                    approval::dispatch_with(&ledger, request, recheck, &once, &options).await
                }
                None => {
                    let once = approval::OneSend {
                        inner: &provider,
                        ledger: &ledger,
                        approval: &approval,
                        by: by_or_default(None),
                    };
                    approval::dispatch_with(&ledger, request, recheck, &once, &options).await
                }
            }
        };
        let dispatched = match super::interrupt::unless_signalled(work).await {
            Ok(dispatched) => dispatched,
            Err(signal) => {
                return super::interrupt::report(&ledger, &args.ledger, key, before, signal).await;
            }
        };
        if let Ok(Dispatched::Ledger(outcome)) = &dispatched {
            let (changed, what) = match outcome {
                Outcome::Duplicate { .. } => (DecisionOutcome::Unchanged, "duplicate"),
                Outcome::Sent { .. } => (DecisionOutcome::Changed, "sent"),
                Outcome::Confirmed { .. } => (DecisionOutcome::Changed, "confirmed"),
                Outcome::Unknown { .. } => (DecisionOutcome::Changed, "unknown"),
                // Stopped before the send because the queue closed the draft: the
                // dispatch was refused, and nothing went out (L1).
                Outcome::Failed { error, .. }
                    if send_once::approval::stopped_before_send(error) =>
                {
                    (DecisionOutcome::Refused, "not sent")
                }
                Outcome::Failed { .. } => (DecisionOutcome::Changed, "failed"),
            };
            let decision =
                outside_dispatch_decision(&args.key, &approval, at_now(), changed, what, None);
            log_decision(&ledger, &args.ledger, &decision).await;
        }
        match dispatched {
            Ok(Dispatched::Ledger(outcome)) => report(
                &args.ledger,
                args.json,
                key,
                Ok(outcome),
                super::run::Started {
                    not_started: provider.not_started(),
                    returned: provider.returned(),
                },
                gates.at(&ledger),
            ),
            Ok(refused) => {
                if let Some(decision) = send_once::review::dispatch::refusal_decision(
                    &refused,
                    Subject::Key(key.to_owned()),
                    None,
                    at_now(),
                ) {
                    log_decision(&ledger, &args.ledger, &decision).await;
                }
                if args.json
                    && let Some(json) = refused.refusal_json()
                {
                    print_json(&json);
                }
                fail(Exit::Refused, refusal_text(&refused, key))
            }
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
                super::run::Started {
                    not_started: provider.not_started(),
                    returned: provider.returned(),
                },
                gates.at(&ledger),
            ),
            // A kind of error this binary does not know may have come after the send:
            // a person must check (exit 3), the safe direction.
            Err(other) => fail(Exit::Unknown, other),
        }
    })
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
