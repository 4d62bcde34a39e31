//! The `once` gate: a call is claimed in the ledger under its key (with the proxy's
//! limit, so every other process knows it may still be running), then forwarded. A
//! final result is recorded as sent and kept, and a repeat gets it back as a replay;
//! a lost answer is unknown, for a person to settle, and a repeat is refused until
//! they do; a call the upstream refused before its tool ran is failed, and a repeat
//! is forwarded as the next attempt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorData, RequestMetaObject,
};
use serde_json::{Map, Value};

use super::lane::Forward;
use super::lane::LateAnswer;
use super::upstream::{Caller, Forwarded, not_in_time};
use crate::ledger::claimer;
use crate::ledger::{Entry, Ledger, LedgerError, Outcome, Receipt, SendContext, SendError};
use crate::mcp::call_key::WHOLE_ARGUMENTS;
use crate::mcp::policy::ErrorMeans;
use crate::mcp::unrecorded::{Unrecorded, store_said};
use crate::provider::{
    CheckAnswer, CheckCommand, CheckKind, DEFAULT_CHECK_TIMEOUT, Limit, Provider, SendOptions,
};

/// How a call goes upstream.
pub enum Via {
    /// As a request of rmcp's client: `params`, with the agent's request `meta` (its
    /// progress token), so that progress comes back to it.
    Rmcp {
        /// The upstream's connection.
        upstream: Caller,
        /// The call.
        params: Box<CallToolRequestParams>,
        /// The agent's request meta.
        meta: Option<RequestMetaObject>,
        /// Whether the agent still waits for the call ([`answered_or_left`] says when
        /// it no longer does).
        waits: Arc<AtomicBool>,
    },
    /// Through the lane, with the parameters the key was made of.
    Lane(Forward),
}

impl Via {
    async fn call(&self, limit: Duration) -> Forwarded {
        match self {
            Via::Rmcp {
                upstream,
                params,
                meta,
                waits,
            } => {
                let call =
                    upstream.call((**params).clone(), meta.clone(), Arc::clone(waits), limit);
                call.await
            }
            Via::Lane(forward) => forward.call(limit).await,
        }
    }
}

/// One call to forward, and what came back of it (kept for the agent: the upstream's
/// own error or result, not only what the ledger records).
pub struct ForwardCall {
    via: Via,
    limit: Duration,
    error: ErrorMeans,
    verify: Option<Vec<String>>,
    answer: Mutex<Option<Forwarded>>,
    unrecorded: Arc<Unrecorded>,
    /// Where a call found unknown is noted, for the proxy's end.
    unsettled: Arc<crate::mcp::left::Unsettled>,
    /// The hash of the arguments the key leaves out, with the rest ([`CallKey::whole`]).
    ///
    /// [`CallKey::whole`]: crate::mcp::call_key::CallKey::whole
    whole: Option<String>,
}

impl ForwardCall {
    /// A call that goes `via` there, limited to `limit`.
    pub fn new(via: Via, limit: Duration, error: ErrorMeans) -> ForwardCall {
        ForwardCall {
            via,
            limit,
            error,
            verify: None,
            answer: Mutex::new(None),
            unrecorded: Arc::default(),
            unsettled: Arc::default(),
            whole: None,
        }
    }

    /// The same call, whose arguments the key leaves out some of, all of them hashing
    /// to `whole`: a repeat answered with an earlier call's result is told when its
    /// arguments were not that call's.
    pub fn with_whole(mut self, whole: Option<String>) -> ForwardCall {
        self.whole = whole;
        self
    }

    /// The same call, with the rule's verify command: asked, as `run --verify` asks
    /// its own, after an uncertain answer and about a call left pending, whether the
    /// upstream acted (it reads the entry as JSON on stdin).
    pub fn verified_by(mut self, verify: Option<Vec<String>>) -> ForwardCall {
        self.verify = verify;
        self
    }

    /// The same call, its unrecorded outcome noted in `unrecorded` (the proxy's).
    pub fn noting_unrecorded_in(mut self, unrecorded: Arc<Unrecorded>) -> ForwardCall {
        self.unrecorded = unrecorded;
        self
    }

    /// Notes the call in `unsettled` when it ends unknown.
    pub fn noting_unknown_in(mut self, unsettled: Arc<crate::mcp::left::Unsettled>) -> ForwardCall {
        self.unsettled = unsettled;
        self
    }

    fn answer(&self) -> Option<Forwarded> {
        self.answer.lock().ok()?.take()
    }

    /// Whether the call outlived its limit where the proxy listens for its answer
    /// (through the lane). Reads the answer without taking it.
    fn listened_for(&self) -> bool {
        let timed_out = self
            .answer
            .lock()
            .is_ok_and(|answer| matches!(*answer, Some(Forwarded::TimedOut)));
        timed_out && matches!(self.via, Via::Lane(_))
    }

    /// The answer to come, should the upstream give it after the call outlived its
    /// limit (through the lane only: rmcp's client drops it).
    fn late(&self) -> Option<LateAnswer> {
        match &self.via {
            Via::Lane(forward) => forward.late(),
            Via::Rmcp { .. } => None,
        }
    }

    /// The upstream's final result, when it answered with one that is not an
    /// `isError`: the call was made. Reads the answer without taking it.
    fn made_result(&self) -> Option<CallToolResult> {
        let answer = self.answer.lock().ok()?;
        match &*answer {
            Some(Forwarded::Done(result)) if result.is_error != Some(true) => Some(result.clone()),
            _ => None,
        }
    }

    /// Whether the call went as far as the upstream: what the ledger says after that
    /// can no longer be "not forwarded".
    pub fn forwarded(&self) -> bool {
        self.answer.lock().is_ok_and(|answer| answer.is_some())
    }
}

/// A final result, as the ledger keeps it.
pub struct ToolReceipt(pub CallToolResult);

impl Receipt for ToolReceipt {
    fn provider_id(&self) -> Option<String> {
        let fields = self.0.structured_content.as_ref()?.as_object()?;
        crate::provider::provider_id_in(fields).ok().flatten()
    }

    fn to_record(&self) -> Option<Value> {
        serde_json::to_value(&self.0).ok()
    }
}

#[async_trait]
impl Provider for ForwardCall {
    type Receipt = ToolReceipt;

    async fn send(&self, context: SendContext) -> Result<ToolReceipt, SendError> {
        // The claim recorded `limit` from its claim time: what is left of it is the
        // upstream's, so no other process sees this attempt as over while it runs.
        self.unrecorded.forget(&context.key);
        let left = self.limit.saturating_sub(context.waited);
        let forwarded = self.via.call(left).await;
        let verdict = match &forwarded {
            Forwarded::Done(result) => Ok(ToolReceipt(result.clone())),
            Forwarded::ToolError(result) if self.error == ErrorMeans::Failed => {
                Err(SendError::definite(format!(
                    "the tool answered with an error (isError), which the policy says means it did not act: {}",
                    result_text(result)
                )))
            }
            Forwarded::ToolError(result) => Err(SendError::uncertain(format!(
                "the tool answered with an error (isError), which does not say whether it acted: {}",
                result_text(result)
            ))),
            Forwarded::NotRun(error) => Err(SendError::definite(format!(
                "the upstream refused the call before its tool ran: error {} ({})",
                error.code.0,
                crate::text::visible_inline(&error.message)
            ))),
            Forwarded::Lost(why) => Err(SendError::uncertain(why)),
            // In the words of the whole limit, not of what was left of it after the
            // claim (a 5s limit is not "4993ms" to a person).
            Forwarded::TimedOut => Err(SendError::uncertain(not_in_time(
                self.limit,
                matches!(self.via, Via::Lane(_)),
            ))),
            Forwarded::Gone => Err(SendError::definite(
                "the upstream server has exited, so the call was not sent; the proxy must be restarted",
            )),
        };
        if let Ok(mut answer) = self.answer.lock() {
            *answer = Some(forwarded);
        }
        if let Err(SendError::Uncertain(_)) = &verdict {
            self.unsettled.note(&context.key);
        }
        verdict
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        let Some(argv) = &self.verify else {
            return CheckAnswer::inconclusive("the policy names no verify command for this tool");
        };
        CheckCommand {
            kind: CheckKind::Verify,
            argv,
            timeout: &Limit::new(DEFAULT_CHECK_TIMEOUT),
            echo_stderr: false,
        }
        .ask(entry)
        .await
    }
}

/// Runs a `once` call: claims `key`, forwards through `forward`, and turns the outcome
/// into the agent's answer. `ledger_name` is how a person names the ledger in the
/// command that settles an unknown call.
pub async fn once(
    ledger: Arc<Ledger>,
    key: String,
    forward: ForwardCall,
    options: SendOptions,
    ledger_name: String,
) -> Result<CallToolResult, ErrorData> {
    match ledger.once_with(&key, &forward, &options).await {
        Ok(outcome) => {
            if let Outcome::Unknown {
                entry,
                error: Some(_),
                ..
            } = &outcome
                && let Some(late) = forward.late()
            {
                tokio::spawn(record_late(
                    Arc::clone(&ledger),
                    entry.clone(),
                    late,
                    Arc::clone(&forward.unsettled),
                ));
            }
            let other = matches!(&outcome, Outcome::Duplicate { entry } if made_with_other(entry, forward.whole.as_deref()));
            let answered = answer(outcome, &forward, &key, &ledger_name, ledger.now());
            if other {
                answered.map(told_other_arguments)
            } else {
                answered
            }
        }
        Err(e) if forward.forwarded() => {
            if let Some(result) = forward.made_result() {
                crate::mcp::left::hold_made(
                    Arc::clone(&ledger),
                    key.clone(),
                    ToolReceipt(result),
                    Arc::clone(&forward.unsettled),
                    "the upstream answered in time, and the ledger could not record it then: the call was made",
                );
            }
            unrecorded(&forward, &key, &ledger_name, &e)
        }
        Err(e) => Ok(refusal(format!(
            "The ledger refused the call, and it was not forwarded: {e}"
        ))),
    }
}

/// Whether the call made under `entry` had other arguments than a repeat whose whole
/// arguments hash to `whole` (both known only where the key leaves some out).
fn made_with_other(entry: &Entry, whole: Option<&str>) -> bool {
    let made = entry
        .meta()
        .and_then(|meta| meta.get(WHOLE_ARGUMENTS))
        .and_then(Value::as_str);
    match (made, whole) {
        (Some(made), Some(whole)) => made != whole,
        (Some(_), None) => true,
        _ => false,
    }
}

/// A replay's `result`, saying that the call it is of had other arguments than the
/// repeat: the same call by its key, not the one the agent asked for now.
fn told_other_arguments(result: CallToolResult) -> CallToolResult {
    told(
        result,
        "send-once: by its key this is the call made before, but its other arguments differ from those: this result is of the call made before, and the call was not made again with these arguments. Do not report them as sent.".to_owned(),
        [("differs", Value::Bool(true))],
    )
}

/// `result` with `sentence` after the tool's own content, and `fields` beside what
/// [`with_meta`] put in its `_meta["send-once"]`: what send-once tells of an answer
/// it gives.
pub fn told(
    mut result: CallToolResult,
    sentence: String,
    fields: impl IntoIterator<Item = (&'static str, Value)>,
) -> CallToolResult {
    result.content.push(ContentBlock::text(sentence));
    if let Some(meta) = result.meta.as_mut()
        && let Some(Value::Object(ours)) = meta.0.get_mut("send-once")
    {
        ours.extend(
            fields
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value)),
        );
    }
    result
}

/// What send-once said of `result` in its `_meta["send-once"]`, if anything.
pub fn said_of(result: &CallToolResult) -> Option<&Map<String, Value>> {
    result.meta.as_ref()?.0.get("send-once")?.as_object()
}

/// How long the proxy listens for the answer to a call that outlived its limit: as
/// long as a listening record may say.
const LATE_ANSWER: Duration = claimer::LONGEST_LISTEN;

/// Records the upstream's final result to the call recorded as `unknown` at its limit,
/// should it come while the proxy runs: the call was made after all. A person who
/// marked it failed meanwhile is overridden (it went out), and a retry already made is
/// noted as a send the recipient may have twice, as for any send that returns late.
/// Until it comes, the entry says the proxy listens; when the window passes without
/// it, the proxy takes that back. An answer the ledger cannot take (a full disk) is
/// written again until the window ends, and named at the proxy's end meanwhile.
async fn record_late(
    ledger: Arc<Ledger>,
    unknown: Entry,
    late: LateAnswer,
    unsettled: Arc<crate::mcp::left::Unsettled>,
) {
    // From when the unknown was recorded, so that no record says longer than a
    // claimer may listen.
    let recorded = unknown
        .updated_at()
        .and_then(crate::js::time::parse_date)
        .unwrap_or_else(|| ledger.now());
    let until_ms =
        recorded.saturating_add(i64::try_from(LATE_ANSWER.as_millis()).unwrap_or(i64::MAX));
    let deadline = tokio::time::Instant::now() + LATE_ANSWER;
    // Should this not be written, the call reads as over while a late answer may
    // still land: what a person settles then is corrected by the answer, as ever.
    let _ = ledger.note_listening(&unknown, until_ms).await;
    let Some(Forwarded::Done(result)) = late.within(LATE_ANSWER).await else {
        let _ = ledger.end_listening(&unknown).await;
        return;
    };
    let receipt = ToolReceipt(result);
    crate::mcp::left::record_until(
        &ledger,
        &unknown,
        &receipt,
        "the upstream answered after the proxy's limit: the call was made",
        &unsettled,
        true,
        deadline,
    )
    .await;
}

/// The agent's answer when the call was forwarded but the ledger could not record
/// what came of it (`error`: a full disk, a lost connection). The claim stands, so the
/// entry stays pending, and the call is not made again until a person settles it;
/// while this proxy runs, its claim counts as running. The upstream's own answer is
/// given as it came, with that said after it: it is the only record of what the call
/// did.
pub fn unrecorded(
    forward: &ForwardCall,
    key: &str,
    ledger_name: &str,
    error: &LedgerError,
) -> Result<CallToolResult, ErrorData> {
    let answer = forward.answer();
    let made = !matches!(answer, Some(Forwarded::NotRun(_) | Forwarded::Gone));
    let not_recorded = not_recorded(key, ledger_name, error, made);
    // The upstream's answer is kept in the note too: an agent that gave up on this
    // request has no other way to it, and the ledger has no record of it.
    let answered_then = match &answer {
        Some(Forwarded::Done(result) | Forwarded::ToolError(result)) => {
            format!(" Its answer then was: {}", answer_text(result))
        }
        _ => String::new(),
    };
    forward.unrecorded.note(
        key,
        if made {
            format!(
                "This call was made earlier (or may have been), but {not_recorded}{answered_then} Do not retry it another way."
            )
        } else {
            not_made_but(&not_recorded)
        },
    );
    match answer {
        Some(Forwarded::Done(mut result) | Forwarded::ToolError(mut result)) => {
            // What `once` hands to `left::hold_made`.
            let later = if result.is_error != Some(true) {
                " This proxy writes this answer to the ledger as soon as it can take it."
            } else {
                ""
            };
            result.content.push(ContentBlock::text(format!(
                "send-once: this call was made, but {not_recorded}{later}"
            )));
            Ok(with_meta_fields(result, key, "pending", false, None))
        }
        Some(Forwarded::NotRun(error)) => Ok(with_status(
            refusal(format!(
                "The upstream refused the call before its tool ran (error {}: {}), so it was not made; but {not_recorded}",
                error.code.0,
                crate::text::visible_inline(&error.message)
            )),
            "unknown",
            key,
        )),
        Some(Forwarded::Gone) => Ok(with_status(
            refusal(format!(
                "The upstream server has exited, so this call was not made; but {not_recorded}"
            )),
            "unknown",
            key,
        )),
        _ => Ok(with_status(
            refusal(format!(
                "Whether this call happened is unknown, and {not_recorded} Do not retry it another way; tell the user it needs checking."
            )),
            "unknown",
            key,
        )),
    }
}

/// The agent's answer when a held call was claimed but refused before it went (the
/// draft could not be marked as made), and the ledger could not record that: not
/// made, but its claim stands until a person settles it.
pub fn claimed_not_made(
    forward: &ForwardCall,
    key: &str,
    ledger_name: &str,
    error: &LedgerError,
) -> CallToolResult {
    let told = not_made_but(&not_recorded(key, ledger_name, error, false));
    forward.unrecorded.note(key, told.clone());
    with_status(refusal(told), "unknown", key)
}

/// What a repeat of a call not made is told when the ledger could not record that.
fn not_made_but(not_recorded: &str) -> String {
    format!("This call was not made, but {not_recorded}")
}

/// What to tell an agent when the ledger could not record what came of its call:
/// the store's own words, and what follows for the call. A call `made` (or that may
/// have been) is settled as sent or failed after checking; one not made only as
/// failed, so that it can be made.
pub fn not_recorded(key: &str, ledger_name: &str, error: &LedgerError, made: bool) -> String {
    let settle = if made {
        settle_hint(ledger_name, key, Claim::CountsAsRunning)
    } else {
        format!("`send-once resolve {ledger_name} {key} failed --even-if-running`")
    };
    format!(
        "the ledger could not record what came of it (the store said, at the time: {}). Its entry stays pending under key {key}, counted as running while this proxy runs, and the call will not be made again until a person settles it ({settle}).",
        store_said(error),
    )
}

/// The agent's answer for what the ledger made of a forwarded call, at `now` (ms).
pub fn answer(
    outcome: Outcome<ToolReceipt>,
    forward: &ForwardCall,
    key: &str,
    ledger_name: &str,
    now: i64,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Outcome::Sent { result, entry } => Ok(with_meta(result.0, key, &entry, false)),
        Outcome::Duplicate { entry } => Ok(replay(key, &entry)),
        // The upstream's answer was lost, and the verify command found the call made.
        // Marked as an error only because there is no result to give: a tool with an
        // output schema must answer success with structured content, which is gone.
        Outcome::Confirmed { entry, .. } => Ok(with_meta(
            CallToolResult::error(vec![ContentBlock::text(format!(
                "This call was made (key {key}): its answer was lost, and the policy's verify command found that it happened. Its result is not known here; it will not be made again."
            ))]),
            key,
            &entry,
            false,
        )),
        Outcome::Failed { entry, error } => match forward.answer() {
            Some(Forwarded::NotRun(error)) => Err(error),
            Some(Forwarded::ToolError(result)) => Ok(with_meta(result, key, &entry, false)),
            _ => Ok(refusal(format!(
                "The call failed and may be made again: {error}"
            ))),
        },
        Outcome::Unknown {
            entry,
            error: Some(error),
            checked,
        } => {
            // A call the proxy goes on listening for is settled failed only by a
            // person who says they know better (AH8).
            let listens = forward.listened_for();
            let settle = settle_hint(
                ledger_name,
                key,
                if listens {
                    Claim::CountsAsRunning
                } else {
                    Claim::Over
                },
            );
            let checked = match checked {
                Some(CheckAnswer::Inconclusive { why }) => {
                    format!(" The verify command could not say: {why}.")
                }
                Some(CheckAnswer::NotThere) => {
                    " The verify command found no record of it yet, which right after a call proves nothing.".to_owned()
                }
                _ => String::new(),
            };
            match forward.answer() {
                // The tool's own words, and what the ledger made of them.
                Some(Forwarded::ToolError(mut result)) => {
                    result.content.push(ContentBlock::text(format!(
                        "send-once: the tool's error does not say whether it acted, so this call is recorded as unknown under key {key}; it will not be made again until a person settles it ({settle})."
                    )));
                    Ok(with_meta(result, key, &entry, false))
                }
                _ => Ok(with_status(
                    refusal(format!(
                        "Whether this call happened is unknown: {}.{checked} It is recorded as unknown under key {key} and will not be made again until a person settles it ({settle}). Do not retry it another way; tell the user it needs checking.",
                        crate::text::visible_inline(&error.to_string())
                    )),
                    "unknown",
                    key,
                )),
            }
        }
        Outcome::Unknown { entry, .. } => {
            let running = claimer::running(&entry, now);
            if let Some(told) = forward.unrecorded.told_of(&entry) {
                Ok(with_status(refusal(told), "unknown", key))
            } else if let claimer::Running::Listening { until_ms, .. } = running {
                Ok(with_status(
                    refusal(format!(
                        "An earlier attempt of this call went past the proxy's limit, and it is recorded as unknown under key {key}. The proxy listens for its answer until {}: asked again after that answer came, this call returns it. It will not be made again until then, or until a person settles it ({}). Do not retry it another way.",
                        crate::js::time::iso_from_millis(until_ms).unwrap_or_default(),
                        settle_hint(ledger_name, key, Claim::CountsAsRunning)
                    )),
                    "unknown",
                    key,
                ))
            } else if running.may_still_run() {
                Ok(with_status(
                    refusal(format!(
                        "This call is still in flight (key {key}): {}. Ask again later; it is not made twice.",
                        running.describe()
                    )),
                    "in_flight",
                    key,
                ))
            } else {
                Ok(with_status(
                    refusal(format!(
                        "An earlier attempt of this call may or may not have happened, and it is recorded as unknown under key {key}; it will not be made again until a person settles it ({}). Do not retry it another way.",
                        settle_hint(ledger_name, key, Claim::Over)
                    )),
                    "unknown",
                    key,
                ))
            }
        }
    }
}

/// How a person settles an unknown call.
fn settle_hint(ledger: &str, key: &str, claim: Claim) -> String {
    let flag = match claim {
        Claim::Over => "",
        Claim::CountsAsRunning => " --even-if-running",
    };
    // Quoted as a shell reads it: the text reaches a person through the agent, and a
    // ledger path may hold anything.
    let ledger = crate::text::visible_inline(&shell_words::quote(ledger)).into_owned();
    format!(
        "`send-once resolve {ledger} {key} sent` or `... failed{flag}`, after checking, or in the TUI's view 2"
    )
}

/// Whether the claim a person settles still counts as running (this process's, left
/// unrecorded), so that marking it failed needs `--even-if-running`.
#[derive(Clone, Copy)]
enum Claim {
    Over,
    CountsAsRunning,
}

/// The result the first call returned, marked as a replay.
fn replay(key: &str, entry: &Entry) -> CallToolResult {
    let kept = entry
        .get("result")
        .cloned()
        .and_then(|r| serde_json::from_value::<CallToolResult>(r).ok());
    match kept {
        Some(result) => with_meta(result, key, entry, true),
        // Made, but by an attempt whose result was not kept (a person's `resolve sent`,
        // a verify's word): an error only because there is no result to give, which a
        // client checks against the tool's output schema; the words say it was made.
        None => with_meta(
            CallToolResult::error(vec![ContentBlock::text(format!(
                "This call WAS already made (key {key}){}; its result was not kept, so it is not shown. It was not made again: do not make it another way.",
                entry
                    .get("sentAt")
                    .and_then(Value::as_str)
                    .map(|at| format!(" at {at}"))
                    .unwrap_or_default()
            ))]),
            key,
            entry,
            true,
        ),
    }
}

/// `result` with what send-once did in its `_meta` (`send-once`: the key, the status,
/// and whether it is a replay of the first call's result).
fn with_meta(result: CallToolResult, key: &str, entry: &Entry, replay: bool) -> CallToolResult {
    with_meta_fields(
        result,
        key,
        entry.status().as_str(),
        replay,
        entry.get("sentAt"),
    )
}

/// [`with_meta`] from its fields: `status` is the entry's in the ledger.
fn with_meta_fields(
    mut result: CallToolResult,
    key: &str,
    status: &str,
    replay: bool,
    sent_at: Option<&Value>,
) -> CallToolResult {
    let mut ours = Map::new();
    ours.insert("key".into(), key.into());
    ours.insert("status".into(), status.into());
    ours.insert("replay".into(), replay.into());
    if let Some(at) = sent_at {
        ours.insert("sentAt".into(), at.clone());
    }
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert("send-once".into(), Value::Object(ours));
    result.meta = Some(meta);
    result
}

/// `result` with `{status, key}` as its structured content, so an agent (or a test)
/// reads what the proxy did without parsing its sentence.
fn with_status(mut result: CallToolResult, status: &str, key: &str) -> CallToolResult {
    result.structured_content = Some(serde_json::json!({"status": status, "key": key}));
    result
}

/// An answer that is an error to the model (never success: it would report it done).
pub fn refusal(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A result's text contents (else its structured content), as [`result_text`].
fn answer_text(result: &CallToolResult) -> String {
    let text = result_text(result);
    match (&result.structured_content, text.is_empty()) {
        (Some(structured), true) => {
            let json: String = structured.to_string().chars().take(500).collect();
            crate::text::visible_inline(&json).into_owned()
        }
        _ => text,
    }
}

/// A result's text contents, joined and made visible, for the ledger's record.
pub fn result_text(result: &CallToolResult) -> String {
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let joined = text.join(" ");
    let short: String = joined.chars().take(500).collect();
    crate::text::visible_inline(&short).into_owned()
}

/// The answer of a call running in a task of its own, or, when the agent's request is
/// cancelled first (it gave up, or the proxy is stopping), an error saying the call
/// goes on: the task is left running, and records what comes.
pub async fn answered_or_left(
    task: tokio::task::JoinHandle<Result<CallToolResult, ErrorData>>,
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    waits: &AtomicBool,
) -> Result<CallToolResult, ErrorData> {
    tokio::select! {
        answer = task => answer.unwrap_or_else(|e| Ok(refusal(format!("the proxy's call stopped: {e}")))),
        () = context.ct.cancelled() => {
            waits.store(false, Ordering::SeqCst);
            Err(ErrorData::internal_error(
                "the request was cancelled (by the client, or the proxy is stopping); the call goes on, and its answer is recorded: ask again for it",
                None,
            ))
        }
    }
}
