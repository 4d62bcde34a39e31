//! `send-once dispatch ID`: a draft of the queue sent once, through the same gates as
//! `run`, and each refusal said with the draft it names.

use crate::cli::dispatch::DispatchArgs;
use crate::cli::ledger_arg::{clock, parse_limit};
use crate::cli::queue_arg::{open_review, review_failure};
use crate::cli::run::{Gates, RunProvider, report};
use crate::cli::{Exit, fail, note, print_json};
use send_once::approval::{ApprovalError, DispatchError, Dispatched};
use send_once::ledger::Access;
use send_once::ledger::LedgerLocation;
use send_once::mcp::held::held_by_proxy;
use send_once::provider::{CommandProvider, CommandReceipt, SendOptions};
use send_once::review::Draft;
use send_once::review::dispatch::{DraftDispatch, Prepared, ReadyDispatch};
use send_once::text::visible_inline;
use serde_json::{Map, Value};
use std::time::Duration;

pub fn dispatch(args: &DispatchArgs) -> Exit {
    if args.approval.is_some() {
        return crate::cli::dispatch::dispatch_approval(args);
    }
    // The payload is the draft's, read below; the command and the gates are checked
    // here, before anything is read or claimed.
    let (provider, options) = match args.send.provider(&args.command, None, None) {
        Ok(built) => built,
        Err(message) => return fail(Exit::Refused, message),
    };
    let gates = Gates::of(&options);
    let recheck_timeout = match parse_limit(&args.recheck_timeout, "--recheck-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let runtime = match crate::cli::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    let send = SendPlan {
        provider,
        options,
        gates,
        recheck_timeout,
    };
    runtime.block_on(dispatch_draft(args, send))
}

/// How a draft is sent: the send command (its payload still to come) and its gates,
/// checked before the queue is read.
struct SendPlan {
    provider: CommandProvider,
    options: SendOptions,
    gates: Gates,
    recheck_timeout: Duration,
}

/// Reads the draft, sends it if it is ready, and reports.
async fn dispatch_draft(args: &DispatchArgs, send: SendPlan) -> Exit {
    let (review, store) = match open_review(&args.ledger, Access::ReadWrite) {
        Ok(opened) => opened,
        Err(exit) => return exit,
    };
    let ready = match review.prepare_dispatch(args.id).await {
        Ok(prepared) => match ready_or_refused(args, prepared) {
            Ok(ready) => ready,
            Err(exit) => return exit,
        },
        Err(e) => return review_failure(e),
    };
    let ledger = crate::cli::ledger_arg::ledger_over(store.clone());
    let mut provider = send.provider;
    provider.payload = Some(ready.payload().as_bytes().to_vec());
    let provider = RunProvider::new(provider);
    let draft = ready.draft().clone();
    let before = ledger.get(&draft.key).await.ok().flatten();
    let work = review.dispatch(
        ready,
        &ledger,
        &provider,
        &send.options,
        send.recheck_timeout,
    );
    let dispatched = match crate::cli::interrupt::unless_signalled(work).await {
        Ok(dispatched) => dispatched,
        Err(signal) => {
            return crate::cli::interrupt::report(
                &ledger,
                &args.ledger,
                &draft.key,
                before,
                signal,
            )
            .await;
        }
    };
    report_dispatched(args, &draft, dispatched, &provider, send.gates)
}

/// The draft ready to send, or the refusal of one that is closed, not approved, or
/// whose approval the decision log does not back.
fn ready_or_refused(args: &DispatchArgs, prepared: Prepared) -> Result<ReadyDispatch, Exit> {
    match prepared {
        Prepared::Ready(ready) if held_by_proxy(ready.draft()).is_some() => Err(fail(
            Exit::Refused,
            held_by_proxy(ready.draft()).unwrap_or_default(),
        )),
        Prepared::Ready(ready) => Ok(ready),
        Prepared::Closed(draft) => Err(fail(
            Exit::Refused,
            format!(
                "draft {} is {}{}; it will not be sent",
                draft.id,
                draft.state.as_str(),
                draft
                    .decided_by
                    .as_deref()
                    .map(|by| format!(" (by {})", visible_inline(by)))
                    .unwrap_or_default()
            ),
        )),
        Prepared::NotApproved(draft) => {
            let message = match draft.quorum_text(clock()()) {
                Some(progress) => format!(
                    "not sent: draft {} is not approved: {}",
                    draft.id,
                    visible_inline(&progress)
                ),
                None => format!(
                    "draft {} has no approval; approve it first (send-once approve {} {})",
                    draft.id, args.ledger, draft.id
                ),
            };
            Err(refuse(args.json, "approval_missing", &draft, message))
        }
        Prepared::Unbacked { draft, why } => {
            let message = format!("not sent: draft {}: {why}", draft.id);
            Err(refuse(args.json, "approval_not_in_log", &draft, message))
        }
    }
}

/// Reports a dispatch: the send's outcome (with the queue's notes), or why the
/// approval did not hold.
fn report_dispatched(
    args: &DispatchArgs,
    draft: &Draft,
    dispatched: Result<DraftDispatch<CommandReceipt>, DispatchError>,
    provider: &RunProvider,
    gates: Gates,
) -> Exit {
    let report_outcome = |outcome| {
        report(
            &args.ledger,
            args.json,
            &draft.key,
            outcome,
            crate::cli::run::Started {
                not_started: provider.not_started(),
                returned: provider.returned(),
            },
            gates,
        )
    };
    match dispatched {
        Ok(DraftDispatch {
            dispatched: Dispatched::Ledger(outcome),
            notes,
            ..
        }) => {
            for said in notes {
                note(said);
            }
            report_outcome(Ok(outcome))
        }
        Ok(DraftDispatch {
            dispatched: refused,
            ..
        }) => {
            let message = refusal_text(&refused, draft, &args.ledger);
            if args.json
                && let Some(json) = refused.refusal_json()
            {
                print_json(&json);
            }
            fail(Exit::Refused, message)
        }
        Err(DispatchError::Approval(ApprovalError::RecheckFailed(reason))) => fail(
            Exit::Refused,
            format!(
                "not sent: could not check the facts of draft {}: {}",
                draft.id,
                visible_inline(&reason)
            ),
        ),
        Err(DispatchError::Approval(e)) => fail(Exit::Refused, format!("not sent: {e}")),
        Err(DispatchError::Ledger(e)) => report_outcome(Err(e)),
        // A kind of error this binary does not know may have come after the send:
        // a person must check (exit 3), the safe direction.
        Err(other) => fail(Exit::Unknown, other),
    }
}

pub(super) fn refuse(json: bool, outcome: &str, draft: &Draft, message: String) -> Exit {
    if json {
        let mut out = Map::new();
        out.insert("outcome".into(), outcome.into());
        out.insert("key".into(), draft.key.clone().into());
        out.insert("draft".into(), draft.id.into());
        print_json(&Value::Object(out));
    }
    fail(Exit::Refused, message)
}

/// "; revision 2 has approved 1 of 2 (dana)": where a draft that needs several
/// approvers stands on its current revision, when it has votes there.
pub(super) fn votes_so_far(draft: &Draft) -> String {
    let tally = draft.tally(clock()());
    if !draft.needs_quorum() || tally.votes.is_empty() {
        return String::new();
    }
    visible_inline(&format!(
        "; revision {} has {} ({})",
        draft.revision,
        tally.label(),
        tally.names().join(", ")
    ))
    .into_owned()
}

pub(super) fn refusal_text<R>(
    refused: &Dispatched<R>,
    draft: &Draft,
    ledger: &LedgerLocation,
) -> String {
    use crate::cli::dispatch::{changed_facts, lasted};
    let id = draft.id;
    match refused {
        Dispatched::Expired {
            expires_at,
            approved_at,
            ..
        } => format!(
            "not sent: the approval of draft {id} expired at {expires_at} ({}); approve it again to send it",
            lasted(approved_at, expires_at)
        ),
        Dispatched::PayloadChanged {
            approved_hash,
            current_hash,
            ..
        } => format!(
            "not sent: the payload of draft {id} changed after it was approved (approved {approved_hash}, now {current_hash}); look at the change (send-once draft show {ledger} {id}) and approve it again{}",
            votes_so_far(draft)
        ),
        // The approval holds the revision's facts as submitted: approving again never
        // helps (operator's shift, session 44: AK2, round and round at 2 a.m.).
        Dispatched::StaleFacts { changed, .. } => visible_inline(&format!(
            "not sent: the facts of draft {id} are not the ones its approval holds, those submitted with revision {} ({}); approving again does not change that: if they changed for good, the draft needs a new revision with the facts as they are now",
            draft.revision,
            changed_facts(changed)
        ))
        .into_owned(),
        Dispatched::Ledger(_) => String::new(),
    }
}
