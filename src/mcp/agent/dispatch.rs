//! `dispatch_draft`: an approved draft sent once, through the send command the
//! operator configured for its channel (`--send CHANNEL=CMD`, or the config file's
//! `[send]` table), never one the agent or the ledger names. The same refusals as
//! `send-once dispatch`, in the same order; a repeat answers from the ledger.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{DispatchError, Dispatched};
use crate::ledger::{Entry, Ledger, LedgerError, Outcome, SendContext, SendError};
use crate::mcp::left::Unsettled;
use crate::mcp::unrecorded::{Unrecorded, store_said};
use crate::provider::{CheckAnswer, CommandProvider, CommandReceipt, Limit, Provider, SendOptions};
use crate::review::Review;
use crate::review::dispatch::Prepared;
use crate::review::quorum::normalise_channel;

/// How long a send command may run (its claim records it).
const SEND_LIMIT: Duration = Duration::from_secs(300);

/// How long the draft's recheck command may take.
const RECHECK_LIMIT: Duration = Duration::from_secs(30);

/// `dispatch_draft`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DispatchDraft {
    /// The approved draft to send.
    pub draft_id: i64,
}

/// What a dispatch came to.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DispatchAnswer {
    /// The draft.
    pub draft_id: i64,
    /// Its send key.
    pub key: String,
    /// `sent`, `already_sent` (a repeat: nothing was sent now), `in_flight` (another
    /// dispatch is sending it now), `unknown` (it may or may not have gone out: a
    /// person settles it) or `failed` (it did not go out).
    pub outcome: String,
    /// The provider's id for the send, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Why it failed or is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What to do now, in a sentence.
    pub next: String,
}

/// The send commands the operator configured, by channel (normalised).
#[derive(Clone, Debug, Default)]
pub struct SendCommands(pub BTreeMap<String, Vec<String>>);

impl SendCommands {
    /// The command for `channel`, if the operator configured one.
    pub fn for_channel(&self, channel: &str) -> Option<&Vec<String>> {
        self.0.get(&normalise_channel(channel))
    }
}

/// Sends draft `id` through the command configured for its channel.
/// What the ledger could not record is noted in `unrecorded` (a repeat is told it),
/// and a send made is noted in `unsettled` and written when the ledger can take it.
pub async fn dispatch(
    review: &Arc<Review>,
    ledger: &Arc<Ledger>,
    commands: &SendCommands,
    (unrecorded, unsettled): (&Arc<Unrecorded>, &Arc<Unsettled>),
    id: i64,
) -> Result<DispatchAnswer, String> {
    let head = review.head(id).await.map_err(|e| e.to_string())?;
    if let Some(why) = crate::mcp::held::held_by_proxy(&head) {
        return Err(why);
    }
    let channel = head
        .meta
        .as_ref()
        .and_then(|m| m.get("channel"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(command) = commands.for_channel(&channel) else {
        return Err(format!(
            "no send command is configured for channel {} here, so draft {id} is dispatched by the operator, not by this tool",
            crate::text::visible_inline(&channel)
        ));
    };
    let ready = match review
        .prepare_dispatch(id)
        .await
        .map_err(|e| e.to_string())?
    {
        Prepared::Ready(ready) => ready,
        Prepared::Closed(draft) => {
            return Err(format!(
                "draft {id} is {}; it will not be sent",
                draft.state.as_str()
            ));
        }
        Prepared::NotApproved(_) => {
            return Err(format!(
                "draft {id} is not approved by a person yet; it was not sent"
            ));
        }
        Prepared::Unbacked { why, .. } => {
            return Err(format!("draft {id} will not be sent: {why}"));
        }
    };
    let mut provider = CommandProvider::new(command.clone());
    provider.payload = Some(ready.payload().as_bytes().to_vec());
    provider.send_timeout = Some(Limit::new(SEND_LIMIT));
    let options = SendOptions::builder()
        .meta(head.meta.clone().unwrap_or_default())
        .limit(SEND_LIMIT)
        .build()
        .map_err(|e| e.to_string())?;
    let provider = Started::new(provider, Arc::clone(unrecorded));
    let done = match review
        .dispatch(ready, ledger, &provider, &options, RECHECK_LIMIT)
        .await
    {
        Ok(done) => done,
        Err(e) => {
            if let Some(receipt) = provider.made() {
                crate::mcp::left::hold_made(
                    Arc::clone(ledger),
                    head.key.clone(),
                    receipt,
                    Arc::clone(unsettled),
                    "the send command succeeded, and the ledger could not record it then: it was sent",
                );
            }
            return not_dispatched(e, provider.started(), id, &head.key, unrecorded);
        }
    };
    dispatched_answer(done.dispatched, id, &head.key, ledger.now(), unrecorded)
}

/// What `dispatch_draft` answers for draft `id` (key `key`) once its dispatch ran,
/// at `now` (ms).
fn dispatched_answer(
    dispatched: Dispatched<CommandReceipt>,
    id: i64,
    key: &str,
    now: i64,
    unrecorded: &Unrecorded,
) -> Result<DispatchAnswer, String> {
    let answer =
        |outcome: &str, entry: &crate::ledger::Entry, error: Option<String>, next: String| {
            DispatchAnswer {
                draft_id: id,
                key: key.to_owned(),
                outcome: outcome.to_owned(),
                provider_id: entry
                    .get("providerId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                error: error.map(|e| crate::text::visible_inline(&e).into_owned()),
                next,
            }
        };
    // Its claim counts as running while this server runs: say why, not "in flight".
    if let Dispatched::Ledger(Outcome::Unknown {
        entry, error: None, ..
    }) = &dispatched
        && let Some(told) = unrecorded.told_of(entry)
    {
        return Ok(answer("unknown", entry, None, told));
    }
    match dispatched {
        Dispatched::Ledger(Outcome::Sent { entry, .. } | Outcome::Confirmed { entry, .. }) => Ok(
            answer("sent", &entry, None, format!("Draft {id} was sent.")),
        ),
        Dispatched::Ledger(Outcome::Duplicate { entry }) => Ok(answer(
            "already_sent",
            &entry,
            None,
            format!("Draft {id} had already been sent; nothing was sent now."),
        )),
        Dispatched::Ledger(Outcome::Unknown {
            entry, error: None, ..
        }) if crate::ledger::claimer::running(&entry, now).may_still_run() => Ok(answer(
            "in_flight",
            &entry,
            None,
            format!(
                "Draft {id} is being sent right now by another dispatch; ask draft_status in a moment. It is not sent twice."
            ),
        )),
        Dispatched::Ledger(Outcome::Unknown { entry, error, .. }) => Ok(answer(
            "unknown",
            &entry,
            error.map(|e| e.to_string()),
            format!(
                "Whether draft {id} went out is unknown; a person settles it. Do not send it another way."
            ),
        )),
        Dispatched::Ledger(Outcome::Failed { entry, error }) => Ok(answer(
            "failed",
            &entry,
            Some(error.to_string()),
            format!("Draft {id} was not sent: the send failed."),
        )),
        Dispatched::Expired { expires_at, .. } => Err(format!(
            "draft {id}'s approval ran out at {expires_at}; a person must approve it again. Nothing was sent"
        )),
        Dispatched::PayloadChanged { .. } => Err(format!(
            "draft {id}'s payload is not the one approved; nothing was sent"
        )),
        Dispatched::StaleFacts { .. } => Err(format!(
            "the facts draft {id} relied on are not the ones its approval holds, so nothing was sent; if they changed for good, submit a revision with the facts as they are now (a person approves it again)"
        )),
    }
}

/// What `dispatch_draft` answers when the dispatch of draft `id` (key `key`) ended in
/// `error`, its send command `started` or not: once it ran, "not sent" would invite a
/// second send, so a ledger that could not record what came of it is "unknown".
/// Either way, a repeat is told the same (`unrecorded`) while the claim is this
/// process's.
fn not_dispatched(
    error: DispatchError,
    started: bool,
    id: i64,
    key: &str,
    unrecorded: &Unrecorded,
) -> Result<DispatchAnswer, String> {
    match error {
        DispatchError::Ledger(e) if started => {
            let why = store_said(&e);
            let next = format!(
                "Draft {id}'s send command ran, but the ledger could not record what came of it (the store said, at the time: {why}): its entry (key {key}) stays pending, counted as running while this server runs, until a person settles it (`send-once resolve` on this ledger: `sent`, or `failed --even-if-running`, after checking). Do not send it another way."
            );
            unrecorded.note(key, next.clone());
            Ok(DispatchAnswer {
                draft_id: id,
                key: key.to_owned(),
                outcome: "unknown".to_owned(),
                provider_id: None,
                error: Some(why),
                next,
            })
        }
        DispatchError::Ledger(e @ LedgerError::Unrecorded { .. }) => {
            let said = format!(
                "draft {id} was not sent, but the ledger could not record that (the store said, at the time: {}): its entry (key {key}) stays pending until a person settles it (`send-once resolve` on this ledger: `failed --even-if-running`)",
                store_said(&e),
            );
            unrecorded.note(key, format!("{said}."));
            Err(said)
        }
        e => Err(format!("draft {id} was not sent: {e}")),
    }
}

/// The operator's send command, noting whether it was started: a ledger error after
/// that can no longer mean "not sent".
/// Its start makes what was noted of an older attempt's unrecorded outcome stale.
/// A send that succeeded keeps its receipt: should the ledger not take it, it is
/// written later.
struct Started {
    command: CommandProvider,
    started: std::sync::atomic::AtomicBool,
    unrecorded: Arc<Unrecorded>,
    made: std::sync::Mutex<Option<CommandReceipt>>,
}

impl Started {
    fn new(command: CommandProvider, unrecorded: Arc<Unrecorded>) -> Started {
        Started {
            command,
            started: Default::default(),
            unrecorded,
            made: Default::default(),
        }
    }

    fn started(&self) -> bool {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The receipt of the send, when its command succeeded.
    fn made(&self) -> Option<CommandReceipt> {
        self.made.lock().ok()?.clone()
    }
}

#[async_trait::async_trait]
impl Provider for Started {
    type Receipt = <CommandProvider as Provider>::Receipt;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        self.command.precheck(entry).await
    }

    async fn send(&self, context: SendContext) -> Result<Self::Receipt, SendError> {
        self.started
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.unrecorded.forget(&context.key);
        let sent = self.command.send(context).await;
        if let (Ok(receipt), Ok(mut made)) = (&sent, self.made.lock()) {
            *made = Some(receipt.clone());
        }
        sent
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        self.command.verify(entry).await
    }
}
