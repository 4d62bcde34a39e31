//! `send-once run`: claim the key, run the send command, record what happened.

use std::path::PathBuf;
use std::sync::Mutex;

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::claimer;
use send_once::ledger::{
    Entry, LedgerError, LedgerLocation, Outcome, SendContext, SendError, canonical,
};
use send_once::open::Open;
use send_once::provider::{
    CheckAnswer, CheckKind, CommandProvider, CommandReceipt, CommandSendError, Provider,
    SendOptions, split_command,
};

use super::keys::{KeyChoice, parse_meta};
use super::ledger_arg::{ledger_to_create, limit_flag};
use super::output::{print_command_stdout, print_json_line};
use super::{Exit, display_path, fail, note, print_json, print_stdout, read_text_arg};

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
    #[command(flatten)]
    pub send: SendFlags,
    /// Print the outcome as JSON instead of the command's output
    #[arg(long)]
    pub json: bool,
    /// The send command and its arguments, after --
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// How a send is made and which gates ask the provider: shared by `run` and
/// `dispatch`.
#[derive(Args, Debug, Clone, Default)]
pub struct SendFlags {
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
    /// Ask the provider's record before claiming: exit 0 with a JSON object = already
    /// there (recorded as sent, not sent), 1 = not there (send), anything else refuses
    #[arg(long, value_name = "CMD")]
    pub precheck: Option<String>,
    /// Ask the provider's record after an uncertain send, and about a key already
    /// pending: exit 0 with a JSON object = it happened (recorded as sent)
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Kill a precheck or verify command after this long; its answer is then inconclusive
    #[arg(
        long,
        default_value = "30s",
        allow_hyphen_values = true,
        value_name = "D"
    )]
    pub check_timeout: String,
    /// Wait up to this long for another process's send of the same key that is still in flight
    #[arg(long, allow_hyphen_values = true, value_name = "D")]
    pub wait: Option<String>,
    /// Send again a pending key claimed longer ago than this, when --verify says it is
    /// not there (compare-and-set: one process wins). Never without --verify
    #[arg(long, allow_hyphen_values = true, value_name = "D")]
    pub stale_after: Option<String>,
}

impl SendFlags {
    /// The provider and the gates, checked before the ledger is touched: durations,
    /// exit statuses, and every command found and executable.
    pub fn provider(
        &self,
        command: &[String],
        payload: Option<Vec<u8>>,
        meta: Option<Map<String, Value>>,
    ) -> Result<(CommandProvider, SendOptions), String> {
        let mut provider = CommandProvider::new(command.to_vec());
        provider.payload = payload;
        provider.failed_exit = self.failed_exit.clone();
        provider.keep_result = self.keep_result;
        provider.send_timeout = self
            .timeout
            .as_deref()
            .map(|t| limit_flag("--timeout", t))
            .transpose()?;
        provider.check_timeout = limit_flag("--check-timeout", &self.check_timeout)?;
        provider.precheck = self
            .precheck
            .as_deref()
            .map(|c| split_command("--precheck", c))
            .transpose()?;
        provider.verify = self
            .verify
            .as_deref()
            .map(|c| split_command("--verify", c))
            .transpose()?;
        let mut options = SendOptions::builder()
            .precheck(provider.precheck.is_some())
            .verify(provider.verify.is_some());
        if let Some(who) = super::ledger_arg::by_or_default(None) {
            options = options.on_behalf_of(who);
        }
        if let Some(meta) = meta {
            options = options.meta(meta);
        }
        if let Some(timeout) = &provider.send_timeout {
            options = options.limit(timeout.after);
        }
        if let Some(text) = &self.wait {
            options = options.wait(limit_flag("--wait", text)?.after);
        }
        if let Some(text) = &self.stale_after {
            let stale = limit_flag("--stale-after", text)?;
            // A takeover must never meet a send that is still running: every send is
            // killed at --timeout, so a claim older than that (and than D) has ended.
            let Some(timeout) = &provider.send_timeout else {
                return Err(format!(
                    "--stale-after needs --timeout: without a time limit a send can still be running when its claim is {} old, and taking it over would send it twice",
                    stale.written
                ));
            };
            if stale.after <= timeout.after {
                return Err(format!(
                    "--stale-after {} is not longer than --timeout {}: a send still running would be taken over and sent twice",
                    stale.written, timeout.written
                ));
            }
            options = options.stale_after(stale.after);
        }
        let options = options.build().map_err(|e| e.to_string())?;
        provider.validate()?;
        Ok((provider, options))
    }
}

/// Everything `run` needs, checked before the ledger is touched.
struct Plan {
    key: String,
    provider: CommandProvider,
    options: SendOptions,
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
    let (provider, options) = args.send.provider(&args.command, payload, meta)?;
    Ok(Plan {
        key,
        provider,
        options,
    })
}

/// The command provider as `run` and `dispatch` use it: a send command that never
/// started is remembered, since it cannot have sent anything (exit 2, not 1).
pub struct RunProvider {
    inner: CommandProvider,
    not_started: Mutex<Option<String>>,
    returned: Mutex<Option<Returned>>,
}

/// What a send command gave back, kept for when its result cannot be recorded: then it
/// is the one thing that settles the send, and must not be thrown away.
#[derive(Clone, Debug, Default)]
pub struct Returned {
    pub stdout: Vec<u8>,
    pub provider_id: Option<String>,
}

impl RunProvider {
    pub fn new(inner: CommandProvider) -> RunProvider {
        RunProvider {
            inner,
            not_started: Mutex::new(None),
            returned: Mutex::new(None),
        }
    }

    /// Why the send command never started, when it did not.
    pub fn not_started(&self) -> Option<String> {
        self.not_started.lock().ok().and_then(|slot| slot.clone())
    }

    /// What the last send command that returned gave back.
    pub fn returned(&self) -> Option<Returned> {
        self.returned.lock().ok().and_then(|slot| slot.clone())
    }
}

#[async_trait::async_trait]
impl Provider for RunProvider {
    type Receipt = CommandReceipt;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        self.inner.precheck(entry).await
    }

    async fn send(&self, context: SendContext) -> Result<CommandReceipt, SendError> {
        match self.inner.send_command(context).await {
            Ok(receipt) => {
                if let Ok(mut slot) = self.returned.lock() {
                    *slot = Some(Returned {
                        stdout: receipt.stdout().to_vec(),
                        provider_id: send_once::ledger::Receipt::provider_id(&receipt),
                    });
                }
                Ok(receipt)
            }
            Err(CommandSendError::NotStarted(message)) => {
                if let Ok(mut slot) = self.not_started.lock() {
                    *slot = Some(message.clone());
                }
                Err(SendError::definite(message))
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        self.inner.verify(entry).await
    }
}

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
    let opened = match location.open(Access::Create) {
        Ok(opened) => opened,
        Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
    };
    let ledger = super::ledger_arg::ledger_over(opened.store);
    if let Some(refused) = refused_by_queue(opened.queue.clone(), &plan.key).await {
        return refused;
    }
    let provider = RunProvider::new(plan.provider);
    let before = ledger.get(&plan.key).await.ok().flatten();
    // A key the ledger answers for (its draft dispatched, the entry pending) is let
    // through above; should a `--wait` or a takeover turn that into a claim, the queue
    // is asked again before the send (G6).
    let review = opened
        .queue
        .map(|queue| send_once::review::Review::new(queue, super::ledger_arg::clock()));
    // A key with a draft is its dispatch's to take over: a `--stale-after` of `run`
    // would claim it over a dispatch's attempt, then be stopped by the queue and
    // record the key failed while that attempt may have gone out (T1).
    if plan.options.stale_after().is_some()
        && let Some(review) = &review
    {
        match send_once::review::dispatch::newest_draft(review, &plan.key).await {
            Ok(None) => {}
            Ok(Some(id)) => {
                return fail(
                    Exit::Refused,
                    format!(
                        "{}: draft {id} of this key is in this ledger's review queue, so its claims are its dispatch's: run does not take them over (--stale-after). Nothing was sent",
                        visible(&plan.key)
                    ),
                );
            }
            Err(e) => {
                return super::output::fail_with(
                    Exit::Refused,
                    super::output::Problem::new(super::output::Kind::Io, e),
                );
            }
        }
    }
    let work = async {
        match &review {
            Some(review) => {
                let guarded = send_once::review::dispatch::StillWanted {
                    inner: &provider,
                    review,
                    by: send_once::review::dispatch::StillWantedBy::NoDraft { key: &plan.key },
                };
                ledger.once_with(&plan.key, &guarded, &plan.options).await
            }
            None => ledger.once_with(&plan.key, &provider, &plan.options).await,
        }
    };
    let outcome = match super::interrupt::unless_signalled(work).await {
        Ok(outcome) => outcome,
        Err(signal) => {
            return super::interrupt::report(&ledger, &location, &plan.key, before, signal).await;
        }
    };
    let gates = Gates::of(&plan.options).at(&ledger);
    report(
        &location,
        args.json,
        &plan.key,
        outcome,
        Started {
            not_started: provider.not_started(),
            returned: provider.returned(),
        },
        gates,
    )
}

/// What the provider saw of the send command: that it never started, or what it gave
/// back when it returned.
#[derive(Default)]
pub struct Started {
    pub not_started: Option<String>,
    pub returned: Option<Returned>,
}

/// Which gates a run had, for what its messages suggest.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gates {
    pub stale_after: bool,
    /// The ledger's time (its store's clock) when the outcome came, for saying how a
    /// claim stands; None: this host's clock.
    pub now_ms: Option<i64>,
}

impl Gates {
    pub fn of(options: &SendOptions) -> Gates {
        Gates {
            stale_after: options.stale_after().is_some(),
            now_ms: None,
        }
    }

    /// The same gates, with the ledger's time now.
    pub fn at(self, ledger: &send_once::ledger::Ledger) -> Gates {
        Gates {
            now_ms: Some(ledger.now()),
            ..self
        }
    }
}

/// A send that returned but could not be recorded: what it gave back (its stdout, its
/// provider id) is passed on and named, since it is what settles the send once the
/// ledger can be written again.
fn unrecorded(
    ledger: &LedgerLocation,
    json: bool,
    key: &str,
    error: &LedgerError,
    returned: Option<Returned>,
) -> Exit {
    let Some(returned) = returned else {
        return fail(Exit::Unknown, error);
    };
    if !json {
        print_command_stdout(&returned.stdout);
    }
    let shown_key = super::output::pasteable(key);
    let ledger = super::output::pasteable(&ledger.as_argument());
    let settle = match &returned.provider_id {
        Some(id) => format!(
            "The send command returned, with provider id {}. Once the ledger can be written, record it:\n  send-once resolve {ledger} {shown_key} sent --provider-id {}",
            send_once::text::visible_inline(id),
            super::output::pasteable(id)
        ),
        None => format!(
            "The send command returned (its output is above). Once the ledger can be written, record it:\n  send-once resolve {ledger} {shown_key} sent"
        ),
    };
    fail(Exit::Unknown, format!("{error}\n{settle}"))
}

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
    } else if let Some(Value::Array(late)) = entry.get("lateSends") {
        let attempt = late
            .last()
            .and_then(|l| l.get("attempt"))
            .and_then(Value::as_u64);
        // No later attempt: nobody marked it failed; its claim went missing.
        let why = if attempt.is_some_and(|a| entry.attempts() <= a) {
            "its claim went missing from the ledger while it ran (the file was replaced or restored)"
        } else {
            "it was marked failed"
        };
        note(format!(
            "this send returned after {why} and {} was claimed again (attempt {}): it went out too, so the recipient may have it twice. The decision log records it.",
            entry.key(),
            entry.attempts()
        ));
    }
}

/// Tells what the ledger did with a send, with the exit code for it.
pub fn report(
    ledger: &LedgerLocation,
    json: bool,
    key: &str,
    outcome: Result<Outcome<CommandReceipt>, LedgerError>,
    started: Started,
    gates: Gates,
) -> Exit {
    let Started {
        not_started,
        returned,
    } = started;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e @ LedgerError::Unrecorded { .. }) => {
            return unrecorded(ledger, json, key, &e, returned);
        }
        // The exit code stays 2 (the send could not run); the kind says why.
        Err(e) => return super::output::fail_with(Exit::Refused, super::ledger_problem(e).1),
    };
    if json {
        print_json(&outcome_json(key, &outcome));
    }
    match outcome {
        Outcome::Sent { result, entry } => report_sent(key, json, &result, &entry),
        Outcome::Duplicate { entry } => report_duplicate(key, json, &entry),
        Outcome::Confirmed {
            entry,
            gate,
            id_problem,
        } => report_confirmed(key, json, &entry, gate, id_problem),
        Outcome::Unknown {
            entry,
            error,
            checked,
        } => {
            let what = why_pending(key, &entry, error.as_ref());
            let asked = what_verify_said(key, &entry, checked.as_ref(), error.is_some(), gates);
            let settle = how_to_settle(ledger, key, &entry);
            fail(Exit::Unknown, format!("{what}{asked}\n{settle}"))
        }
        Outcome::Failed { error, .. } => report_failed(not_started, &error),
    }
}

/// Sent now: the command's stdout (without --json), its notes, and whether it was
/// sent again over a stale claim or returned late.
fn report_sent(key: &str, json: bool, result: &CommandReceipt, entry: &Entry) -> Exit {
    if !json {
        print_command_stdout(result.stdout());
    }
    for said in result.notes() {
        note(said);
    }
    if let Some(Value::Object(takeover)) = entry.get("takeover") {
        note(format!(
            "{key}: attempt {} (claimed at {}) was stale and the verify command found no record of it, so it was sent again as attempt {}",
            takeover.get("attempt").map(jsjson_text).unwrap_or_default(),
            takeover
                .get("claimedAt")
                .and_then(Value::as_str)
                .map(visible)
                .unwrap_or_default(),
            entry.attempts()
        ));
    }
    warn_if_late(entry);
    Exit::Ok
}

/// Sent before: not sent again.
fn report_duplicate(key: &str, json: bool, entry: &Entry) -> Exit {
    // What the first send returned when it was kept (--keep-result), else
    // the provider id: all the ledger has.
    if !json {
        print_kept(entry);
    }
    note(format!(
        "{key} was already sent{}{}; not sent again",
        entry
            .get("sentAt")
            .and_then(Value::as_str)
            .map(|at| format!(" at {}", visible(at)))
            .unwrap_or_default(),
        entry
            .provider_id()
            .map(|id| format!(" (provider id {})", visible(id)))
            .unwrap_or_default(),
    ));
    Exit::Ok
}

/// Found in the provider's records by a check: recorded as sent, not sent.
fn report_confirmed(
    key: &str,
    json: bool,
    entry: &Entry,
    gate: CheckKind,
    id_problem: Option<String>,
) -> Exit {
    if !json {
        print_kept(entry);
    }
    if let Some(problem) = id_problem {
        note(format!("{}: {}", gate.command_name(), visible(&problem)));
    }
    let found = entry
        .provider_id()
        .map(|id| format!(" (provider id {})", visible(id)))
        .unwrap_or_default();
    note(match gate {
        CheckKind::Precheck => format!(
            "{key} is already in the provider's records{found}: the precheck found it, so it is recorded as sent and was not sent"
        ),
        CheckKind::Verify => format!(
            "{key} is in the provider's records{found}: the verify command found it, so it is recorded as sent and was not sent again"
        ),
    });
    Exit::Ok
}

/// Why a send whose fate is unknown stays pending, and was not sent again.
fn why_pending(key: &str, entry: &Entry, error: Option<&SendError>) -> String {
    match error {
        // Nothing recorded for its attempt yet: another process may be sending
        // it right now, and "failed" would let it go twice.
        None if entry.error().is_none() && !entry.uncertain() => format!(
            "{key} is pending: attempt {} (claimed at {}) has recorded no end, so it may still be sending, or the process sending it died. It was not sent again. Wait for it (--wait D), or check with the provider before resolving it: marking it failed while it is still sending can send it twice.",
            entry.attempts(),
            visible(entry.claimed_at())
        ),
        None => format!(
            "{key} has been pending since {} (attempt {}): an earlier attempt may have reached the provider, so it was not sent again.",
            visible(entry.claimed_at()),
            entry.attempts()
        ),
        Some(error) => format!(
            "{}\nThe send may or may not have gone out. It stays pending and will not be sent again on its own.",
            visible(error.message())
        ),
    }
}

/// What the verify command said of a pending send, if it was asked ("" if not).
fn what_verify_said(
    key: &str,
    entry: &Entry,
    checked: Option<&CheckAnswer>,
    send_failed: bool,
    gates: Gates,
) -> String {
    match (checked, send_failed) {
        (None, _) => String::new(),
        (Some(CheckAnswer::NotThere), true) => "\nThe verify command found no record of it yet; right after a send that proves nothing (a provider's records can lag).".to_owned(),
        (Some(CheckAnswer::NotThere), false) => why_not_taken_over(entry, gates),
        (Some(CheckAnswer::Inconclusive { why }), _) => {
            format!("\nThe verify command could not tell: {why}.")
        }
        (Some(CheckAnswer::Happened { .. }), _) => format!(
            "\nThe verify command found it, but {key} was changed by someone else first; it is now {}.",
            entry.status()
        ),
    }
}

/// Why a claim the verify command found no record of was not sent again.
fn why_not_taken_over(entry: &Entry, gates: Gates) -> String {
    let now = gates.now_ms.unwrap_or_else(|| super::ledger_arg::clock()());
    let standing = claimer::running(entry, now);
    if gates.stale_after && standing.holds_off_failed() {
        format!(
            "\nThe verify command found no record of it, but it is not taken over: {}; --stale-after cannot shorten that.",
            standing.describe()
        )
    } else if gates.stale_after {
        "\nThe verify command found no record of it, but the claim is younger than --stale-after, so it is not taken over yet.".to_owned()
    } else {
        "\nThe verify command found no record of it. With --stale-after D, a claim older than D that verify cannot find is sent again.".to_owned()
    }
}

/// How to settle a send whose fate is unknown: the commands to paste.
fn how_to_settle(ledger: &LedgerLocation, key: &str, entry: &Entry) -> String {
    format!(
        "Check with the provider, then record what happened:\n{}",
        super::output::settle_commands(
            &ledger.as_argument(),
            key,
            entry.attempts(),
            Some(entry.claimed_at()),
            ""
        )
    )
}

/// A send that failed, or never started.
fn report_failed(not_started: Option<String>, error: &SendError) -> Exit {
    match not_started {
        Some(message) => fail(Exit::Refused, visible(&message)),
        // A dispatch's guard stopped it before the send (its draft closed or
        // revised meanwhile, its approval gone out elsewhere): nothing went out,
        // and what stopped it keeps it from going. A refusal, as the ones found
        // before the claim are (exit 2), not a send that failed and may be tried
        // again (AL4: it exited 1).
        None if send_once::approval::stopped_before_send(error) => fail(
            Exit::Refused,
            format!(
                "{}. It is recorded as failed; nothing went out, and it is not sent while that holds.",
                visible(error.message())
            ),
        ),
        None => fail(
            Exit::Failed,
            format!(
                "the send failed: {}. It is recorded as failed; the next run may send it.",
                visible(error.message())
            ),
        ),
    }
}

/// What the ledger kept of a send: its `result` (a kept reply, a check's evidence)
/// as one JSON line, else the provider id.
fn print_kept(entry: &Entry) {
    match (entry.get("result"), entry.provider_id()) {
        (Some(result), _) => print_json_line(result),
        (None, Some(id)) => print_stdout(&format!("{}\n", send_once::text::visible_inline(id))),
        (None, None) => {}
    }
}

fn jsjson_text(value: &Value) -> String {
    visible(&send_once::ledger::jsjson::stringify(value))
}

pub fn outcome_json(key: &str, outcome: &Outcome<CommandReceipt>) -> Value {
    let mut out = Map::new();
    out.insert("outcome".into(), outcome.name().into());
    out.insert("key".into(), key.into());
    out.insert("entry".into(), outcome.entry().to_value());
    match outcome {
        Outcome::Sent { result, .. } => {
            out.insert("result".into(), result.value().clone());
        }
        Outcome::Duplicate { entry } => {
            out.insert(
                "result".into(),
                entry.get("result").cloned().unwrap_or(Value::Null),
            );
        }
        Outcome::Confirmed { entry, gate, .. } => {
            out.insert(
                "gate".into(),
                match gate {
                    CheckKind::Precheck => "precheck",
                    CheckKind::Verify => "verify",
                }
                .into(),
            );
            out.insert(
                "result".into(),
                entry.get("result").cloned().unwrap_or(Value::Null),
            );
        }
        Outcome::Unknown { error, checked, .. } => {
            if let Some(error) = error {
                out.insert("error".into(), error.message().into());
            }
            if let Some(answer) = checked {
                out.insert("verify".into(), answer_json(answer));
            }
        }
        Outcome::Failed { error, .. } => {
            out.insert("error".into(), error.message().into());
        }
    }
    Value::Object(out)
}

/// A check's answer as JSON: `{"answer": "not there"}`, with the reason when inconclusive.
pub fn answer_json(answer: &CheckAnswer) -> Value {
    let mut out = Map::new();
    out.insert("answer".into(), answer.name().into());
    match answer {
        CheckAnswer::Inconclusive { why } => {
            out.insert("why".into(), why.clone().into());
        }
        CheckAnswer::Happened {
            provider_id,
            evidence,
            ..
        } => {
            out.insert(
                "providerId".into(),
                provider_id.clone().map_or(Value::Null, Value::from),
            );
            out.insert("evidence".into(), Value::Object(evidence.clone()));
        }
        CheckAnswer::NotThere => {}
    }
    Value::Object(out)
}

/// Text from a command or an entry, with control characters shown rather than obeyed.
fn visible(text: &str) -> String {
    send_once::text::visible(text).into_owned()
}

/// A person's no in the review queue holds for every send outside it (`run`, `mail`):
/// a key whose draft on this ledger is not dispatched yet is refused, naming why. None
/// when the ledger has no queue or the key no draft in it.
pub(super) async fn refused_by_queue(
    queue: Option<std::sync::Arc<dyn send_once::review::store::QueueStore>>,
    key: &str,
) -> Option<Exit> {
    let review = send_once::review::Review::new(queue?, super::ledger_arg::clock());
    match send_once::review::dispatch::queued_elsewhere(&review, key).await {
        Ok(None) => None,
        Ok(Some(why)) => {
            let problem = super::output::Problem::new(
                super::output::Kind::Refused,
                format!("{}: {why}. Nothing was sent.", visible(key)),
            )
            .with("key", Some(key.to_owned()));
            Some(super::output::fail_with(Exit::Refused, problem))
        }
        Err(e) => Some(super::output::fail_with(
            Exit::Refused,
            super::output::Problem::new(super::output::Kind::Io, e),
        )),
    }
}
