//! The `hold` gate: a call becomes a draft in the review queue (its arguments the
//! payload, its caller the submitter), and the agent is told it was held, never that
//! it succeeded. The proxy's own status tool says what became of it and, once a person
//! approved it, makes the call once, with the approved revision's arguments (a
//! reviewer's edit is what goes upstream), through the same checks as `send-once
//! dispatch` (expiry, the payload approved, facts, N of M). A held draft is sent only
//! through the proxy: `send-once dispatch` refuses it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ErrorData, Tool};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::once::{ForwardCall, Via, answer, claimed_not_made, refusal, said_of, told, unrecorded};
use super::{ProxyServer, entry_meta};
use crate::approval::{DispatchError, Dispatched};
use crate::ledger::LedgerError;
use crate::mcp::call_key::{CallKey, call_key};
use crate::mcp::policy::ToolRule;
use crate::mcp::status::{DraftStatus, Standing};
use crate::provider::SendOptions;
use crate::review::dispatch::{DraftDispatch, Prepared, newest_draft};
use crate::review::meta::{INTENT_ARGUMENTS, TO_ARGUMENT};
use crate::review::{Base, Draft, DraftState, Review, Submission};

pub use crate::mcp::held::{HELD_BY, PROXY, held_by_proxy};

/// How long a held call's facts recheck may take (a held call has none: its facts are
/// what it was called with).
const RECHECK: Duration = Duration::from_secs(30);

/// The proxy's own tool, as `tools/list` shows it.
pub fn status_tool(name: &str) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "draftId": {"type": "integer", "description": "The held call's draft id, as the held answer gave it."},
            "key": {"type": "string", "description": "Or the held call's key."}
        },
        "additionalProperties": false
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object")
    };
    Tool::new(
        name.to_owned(),
        "What became of a call send-once held for a person's approval. Once approved, this makes the call (once, with the arguments the person approved) and returns its result; rejected, it says why. Give draftId or key from the held answer.",
        Arc::new(schema),
    )
}

/// A call the policy holds: queued as a draft, or, when its draft is decided, what
/// the status tool says of it.
pub async fn held(
    server: &ProxyServer,
    params: CallToolRequestParams,
    rule: &ToolRule,
    key: CallKey,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let Some(review) = server.config.review.clone() else {
        return Ok(refusal(
            "send-once holds this call for a person, but its ledger keeps no review queue; it was not made".to_owned(),
        ));
    };
    // A call of a tool the upstream does not have would be approved, then refused.
    if !server.upstream.tools.iter().any(|t| t.name == params.name) {
        return Ok(refusal(format!(
            "the upstream {} has no tool named {}; nothing was held",
            crate::text::visible_inline(&server.config.policy.upstream),
            crate::text::visible_inline(&params.name)
        )));
    }
    // The same call again is the same draft: say where it stands (and make it, once
    // approved), instead of queueing it twice.
    // A dispatched draft whose send failed is made again under its approval, as
    // `send_once_status` (and `send-once dispatch`) would: the same answer by either way.
    let arguments = params.arguments.clone().unwrap_or_default();
    if let Some(id) = newest_draft(&review, &key.key).await.map_err(internal)?
        && let Ok(draft) = review.head(id).await
        && !matches!(draft.state, DraftState::Withdrawn)
        && !spent(&review, &draft).await
    {
        // The same by its key, but not as the agent first made it: the held call is
        // not these arguments, so it is neither made for them nor said to be them.
        let differs = differing(&review, id, &arguments, rule).await;
        if !differs.is_empty() {
            return Ok(not_these(server, &review, &draft, &differs).await);
        }
        return status_of(server, &review, draft, context).await;
    }
    let mut meta = entry_meta(&server.config.policy.upstream, &params.name, rule, &key);
    meta.insert(HELD_BY.into(), PROXY.into());
    // The arguments its recipient and intent are read from: the queue reads them
    // again when a reviewer edits the arguments, so that every list shows the call
    // the person approves.
    if let Some(to) = &rule.to {
        meta.insert(TO_ARGUMENT.into(), to.clone().into());
    }
    meta.insert(INTENT_ARGUMENTS.into(), rule.intent.clone().into());
    let submitter = match crate::mcp::client_name::submitter(server.config.by.as_deref(), context) {
        Ok(name) => name,
        Err(why) => {
            return Ok(refusal(format!(
                "This call was not held, and not made: {why}."
            )));
        }
    };
    let submission = Submission {
        key: key.key.clone(),
        payload: Value::Object(arguments).to_string(),
        facts: None,
        recheck: None,
        meta: Some(meta),
        by: Some(submitter),
        approvals: None,
        base: Base::Current,
    };
    match review.submit(submission).await {
        Ok(submitted) => Ok(held_answer(
            &server.config.status_tool,
            submitted.id,
            &key.key,
        )),
        Err(e) => Ok(refusal(format!(
            "send-once could not hold this call for review, and it was not made: {e}"
        ))),
    }
}

/// The status tool: what became of a held call, and the call itself once approved.
pub async fn status(
    server: &ProxyServer,
    params: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let Some(review) = server.config.review.clone() else {
        return Ok(refusal(
            "this proxy's ledger keeps no review queue, so it holds no calls".to_owned(),
        ));
    };
    let arguments = params.arguments.unwrap_or_default();
    let id = match (arguments.get("draftId"), arguments.get("key")) {
        (Some(Value::Number(n)), None) if n.as_i64().is_some() => n.as_i64(),
        (None, Some(Value::String(key))) => newest_draft(&review, key).await.map_err(internal)?,
        _ => {
            return Ok(refusal(
                "give draftId (a number) or key (a string), one of them, from the held answer"
                    .to_owned(),
            ));
        }
    };
    let Some(draft) = id.and_then(|id| Some(id).filter(|id| *id > 0)) else {
        return Ok(refusal("no call was held under that key".to_owned()));
    };
    let draft = match review.head(draft).await {
        Ok(draft) => draft,
        Err(e) => return Ok(refusal(e.to_string())),
    };
    if !ours(server, &review, &draft).await {
        return Ok(refusal(format!(
            "draft {} is not a call held by this proxy (upstream {})",
            draft.id,
            crate::text::visible_inline(&server.config.policy.upstream)
        )));
    }
    status_of(server, &review, draft, context).await
}

/// Whether `draft` is a call this proxy held: marked so, for its upstream, on the
/// channel its tool's rule gives (whose approval policy it was held under), and keyed
/// as the proxy keys that call. A draft submitted another way (`send-once mcp`,
/// `draft submit --meta`) cannot carry a key made from a call's arguments by
/// accident, so the marks alone never make a call.
async fn ours(server: &ProxyServer, review: &Review, draft: &Draft) -> bool {
    let meta = draft.meta.as_ref();
    let field = |name: &str| meta.and_then(|m| m.get(name)).and_then(Value::as_str);
    let (Some(PROXY), Some(upstream), Some(tool)) =
        (field(HELD_BY), field("upstream"), field("tool"))
    else {
        return false;
    };
    let rule = server.config.policy.rule(tool);
    if upstream != server.config.policy.upstream
        || field("channel").map(crate::review::quorum::normalise_channel)
            != Some(crate::review::quorum::normalise_channel(&rule.channel))
    {
        return false;
    }
    // The first revision is the call as the agent made it; the key was made from it,
    // in the window its meta names.
    let Ok(full) = review.draft(draft.id).await else {
        return false;
    };
    let Some(arguments) = first_call(&full) else {
        return false;
    };
    let at = field("window")
        .and_then(crate::js::time::parse_date)
        .unwrap_or_else(|| review.now());
    let declared = server.declared(tool);
    call_key(upstream, tool, &arguments, &rule, at, declared.as_deref())
        .is_ok_and(|key| key.key == draft.key)
}

/// The arguments of the call a held draft was made from: its first revision, read as
/// a call's arguments are (serde_json, so that a number compares as written). `full`
/// is loaded with every revision.
fn first_call(full: &Draft) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(&full.revisions.first()?.payload) {
        Ok(Value::Object(arguments)) => Some(arguments),
        _ => None,
    }
}

/// The top-level arguments in which `arguments` differ from draft `id`'s first
/// revision (the call as the agent first made it), read as the key reads them
/// ([`crate::mcp::call_key::considered`]). A reviewer's later edit is not the agent's:
/// repeating its own call is the same call.
async fn differing(
    review: &Review,
    id: i64,
    arguments: &Map<String, Value>,
    rule: &ToolRule,
) -> Vec<String> {
    let Ok(full) = review.draft(id).await else {
        return Vec::new();
    };
    let Some(first) = first_call(&full) else {
        return Vec::new();
    };
    // As the key reads them: a null is as absent, a recipient in another case the same.
    let considered = |arguments| Value::Object(crate::mcp::call_key::considered(arguments, rule));
    crate::mcp::status::changed_fields(&considered(&first), &considered(arguments))
}

/// The answer to a call that is the held draft's by its key, with arguments that differ
/// from the draft's in `differs`: nothing queued, nothing made.
async fn not_these(
    server: &ProxyServer,
    review: &Review,
    draft: &Draft,
    differs: &[String],
) -> CallToolResult {
    let entry = review.ledger_entry(&draft.key).await.ok().flatten();
    let status = DraftStatus::of(draft, entry.as_ref(), review.now());
    let id = draft.id;
    let status_tool = &server.config.status_tool;
    let fields = differs
        .iter()
        .map(|f| crate::text::visible_inline(f).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "This call was NOT made, and these arguments were NOT queued: by its key it is the call held as draft {id}, which {}, and whose arguments differ from these in: {fields}. A person reviews, and the proxy makes, the held call's own arguments. Call {status_tool} with {{\"draftId\": {id}}} to learn what became of it; do not report this call as done.",
        standing_words(&status)
    ))]);
    result.structured_content = Some(json!({
        "status": "held",
        "draftId": id,
        "key": draft.key,
        "state": status.state,
        "differs": differs,
    }));
    result
}

/// A dispatched draft whose send failed (a person resolved it so) and whose approval
/// has run out since: it can be neither made nor approved again, so the call is held
/// anew, for a person to approve again (second MCP round, N5).
async fn spent(review: &Review, draft: &Draft) -> bool {
    let expired = draft
        .expires_at()
        .is_none_or(|at| crate::js::time::parse_date(at).is_none_or(|at| at <= review.now()));
    draft.state == DraftState::Dispatched
        && expired
        && review
            .ledger_entry(&draft.key)
            .await
            .ok()
            .flatten()
            .is_some_and(|e| e.status() == crate::ledger::Status::Failed)
}

async fn status_of(
    server: &ProxyServer,
    review: &Arc<Review>,
    draft: Draft,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let entry = review.ledger_entry(&draft.key).await.map_err(internal)?;
    let status = DraftStatus::of(&draft, entry.as_ref(), review.now());
    match status.state {
        Standing::Approved | Standing::Dispatched => make(server, review, &draft, context).await,
        Standing::Rejected => {
            let mut result = refusal(format!(
                "A person rejected this call{}{}; it will not be made. Do not make it another way: tell the user why.",
                draft
                    .decided_by
                    .as_deref()
                    .map(|by| format!(" ({by})"))
                    .unwrap_or_default(),
                draft
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
            result.structured_content = Some(json!({
                "status": "rejected",
                "draftId": draft.id,
                "key": draft.key,
                "by": draft.decided_by,
                "reason": draft.reason,
            }));
            Ok(result)
        }
        _ => Ok(still_held(&server.config.status_tool, &status)),
    }
}

/// Makes an approved held call once, through the dispatch checks, and answers with
/// its result; a dispatched one is answered by the ledger (its result again).
async fn make(
    server: &ProxyServer,
    review: &Arc<Review>,
    draft: &Draft,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let ready = match review.prepare_dispatch(draft.id).await.map_err(internal)? {
        Prepared::Ready(ready) => ready,
        Prepared::Closed(draft) => {
            return Ok(refusal(format!(
                "This call's draft {} is {}; it will not be made.",
                draft.id,
                draft.state.as_str()
            )));
        }
        Prepared::NotApproved(draft) => {
            return Ok(refusal(format!(
                "This call's draft {} is not approved; it was not made.",
                draft.id
            )));
        }
        Prepared::Unbacked { draft, why } => {
            return Ok(refusal(format!(
                "This call's draft {} will not be made: {why}",
                draft.id
            )));
        }
    };
    let tool = draft
        .meta
        .as_ref()
        .and_then(|m| m.get("tool"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let arguments: Map<String, Value> = match serde_json::from_str(ready.payload()) {
        Ok(Value::Object(arguments)) => arguments,
        _ => {
            return Ok(refusal(format!(
                "draft {}'s payload is not the arguments of a call (a JSON object); it was not made",
                draft.id
            )));
        }
    };
    let rule = server.config.policy.rule(&tool);
    let limit = rule.timeout.unwrap_or(server.config.timeout);
    // A reviewer may have changed who it goes to: the entry names the recipient of
    // the arguments approved, which is what an operator checks if it ends unknown.
    let mut meta = draft.meta.clone().unwrap_or_default();
    // They say where the draft's rows read from, not what was sent.
    meta.remove(TO_ARGUMENT);
    meta.remove(INTENT_ARGUMENTS);
    if let Ok(approved) = call_key(
        &server.config.policy.upstream,
        &tool,
        &arguments,
        &rule,
        review.now(),
        None,
    ) {
        let fresh = entry_meta(&server.config.policy.upstream, &tool, &rule, &approved);
        for field in ["to", "intent"] {
            match fresh.get(field) {
                Some(value) => meta.insert(field.into(), value.clone()),
                None => meta.remove(field),
            };
        }
    }
    let ready = ready.with_meta(meta.clone());
    // Whether the agent still waits, for the call's progress.
    let waits = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let forward = ForwardCall::new(
        Via::Rmcp {
            upstream: server.upstream.caller(),
            params: Box::new(CallToolRequestParams::new(tool).with_arguments(arguments)),
            meta: Some(context.meta.clone()),
            waits: Arc::clone(&waits),
        },
        limit,
        rule.error,
    )
    .verified_by(rule.verify.clone())
    .noting_unrecorded_in(Arc::clone(&server.unrecorded))
    .noting_unknown_in(Arc::clone(&server.unsettled));
    let options = match SendOptions::builder()
        .meta(meta)
        .limit(limit)
        .verify(rule.verify.is_some())
        .build()
    {
        Ok(options) => options,
        Err(e) => return Ok(refusal(format!("This call was not made: {e}"))),
    };
    let guard = server.in_flight.start();
    let ledger = Arc::clone(&server.config.ledger);
    let review = Arc::clone(review);
    let ledger_name = server.config.ledger_name.clone();
    let key = draft.key.clone();
    let edit = edit_of(&review, draft.id).await;
    // As for `once`: an agent that gives up does not stop the call.
    let task = tokio::spawn(async move {
        let _guard = guard;
        let dispatched = review
            .dispatch(ready, &ledger, &forward, &options, RECHECK)
            .await;
        let answer = made_answer(dispatched, &forward, &key, &ledger_name, ledger.now());
        // Made now, or before (a replay of its result): with the reviewer's arguments.
        match answer {
            Ok(result) if forward.forwarded() || replayed(&result) => {
                Ok(told_of_edit(result, edit))
            }
            answer => answer,
        }
    });
    super::once::answered_or_left(task, context, &waits).await
}

/// A reviewer's edit of a held call: who made it, and the arguments it changed.
struct Edit {
    by: String,
    fields: Vec<String>,
}

/// The edit the current revision of draft `id` is, when a reviewer wrote it.
async fn edit_of(review: &Review, id: i64) -> Option<Edit> {
    let full = review.draft(id).await.ok()?;
    let status = DraftStatus::of(&full, None, review.now()).with_content(&full);
    Some(Edit {
        by: status.edited_by?,
        fields: status.edited_fields.unwrap_or_default(),
    })
}

/// `result`, of a call that went upstream with a reviewer's `edit` of its arguments,
/// saying so: the agent asked for another call, and must not report its own.
fn told_of_edit(result: CallToolResult, edit: Option<Edit>) -> CallToolResult {
    let Some(edit) = edit else {
        return result;
    };
    let by = crate::text::visible_inline(&edit.by).into_owned();
    let fields = edit
        .fields
        .iter()
        .map(|f| crate::text::visible_inline(f).into_owned())
        .collect::<Vec<_>>();
    let sentence = format!(
        "send-once: a reviewer ({by}) changed this call's arguments before it was approved{}; the call went upstream with the arguments approved, not those this agent sent. Report it as made with those.",
        if fields.is_empty() {
            String::new()
        } else {
            format!(" (changed: {})", fields.join(", "))
        }
    );
    told(
        result,
        sentence,
        [
            ("editedBy", edit.by.into()),
            ("editedFields", edit.fields.into()),
        ],
    )
}

/// Whether `result` is a made call's result given again.
fn replayed(result: &CallToolResult) -> bool {
    said_of(result).and_then(|said| said.get("replay")) == Some(&Value::Bool(true))
}

/// The agent's answer for a held call's dispatch, at `now` (ms): what the ledger made
/// of it, or why it was not made.
fn made_answer(
    dispatched: Result<DraftDispatch<super::once::ToolReceipt>, DispatchError>,
    forward: &ForwardCall,
    key: &str,
    ledger_name: &str,
    now: i64,
) -> Result<CallToolResult, ErrorData> {
    match dispatched {
        Ok(done) => match done.dispatched {
            Dispatched::Ledger(outcome) => answer(outcome, forward, key, ledger_name, now),
            Dispatched::Expired { expires_at, .. } => Ok(refusal(format!(
                "The approval of this call ran out at {expires_at} before it was made; a person must approve it again. It was not made."
            ))),
            Dispatched::PayloadChanged { .. } => Ok(refusal(
                "The arguments are no longer the ones a person approved; it was not made."
                    .to_owned(),
            )),
            Dispatched::StaleFacts { .. } => Ok(refusal(
                "The facts changed since a person approved this call; it was not made.".to_owned(),
            )),
        },
        Err(DispatchError::Ledger(e)) if forward.forwarded() => {
            unrecorded(forward, key, ledger_name, &e)
        }
        // Claimed, then refused before the call went (the draft could not be marked
        // as made): not made, but the claim stands.
        Err(DispatchError::Ledger(e @ LedgerError::Unrecorded { .. })) => {
            Ok(claimed_not_made(forward, key, ledger_name, &e))
        }
        Err(e) => Ok(refusal(format!("This call was not made: {e}"))),
    }
}

/// The answer to a call just held: an error to the model (never success, which it
/// would report as done), with what to do next.
fn held_answer(status_tool: &str, id: i64, key: &str) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "Held for a person's approval: this call was NOT made. Draft {id} waits for review. Call {status_tool} with {{\"draftId\": {id}}} to learn what became of it; once approved, that makes the call and returns its result. Do not report it as done."
    ))]);
    result.structured_content = Some(json!({"status": "held", "draftId": id, "key": key}));
    result
}

/// A held call still waiting: where it stands.
fn still_held(status_tool: &str, status: &DraftStatus) -> CallToolResult {
    let id = status.draft_id;
    let stands = standing_words(status);
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "Still held: this call was NOT made. Draft {id} {stands}. Call {status_tool} with {{\"draftId\": {id}}} again later; do not report it as done."
    ))]);
    result.structured_content = Some(json!({
        "status": "held",
        "draftId": status.draft_id,
        "key": status.key,
        "state": status.state,
        "approvals": status.approvals,
    }));
    result
}

/// Where a held call's draft stands, in words after "Draft N".
fn standing_words(status: &DraftStatus) -> String {
    match status.state {
        Standing::EditedByReviewer => "was edited by a reviewer and waits for approval".to_owned(),
        Standing::Expired => "was approved, but the approval ran out before the call was made: it needs approving again".to_owned(),
        Standing::Withdrawn => "was withdrawn".to_owned(),
        Standing::SentElsewhere => "is already recorded as done another way".to_owned(),
        Standing::Approved => "is approved".to_owned(),
        Standing::Rejected => "was rejected".to_owned(),
        Standing::Dispatched => match status.ledger.as_ref().map(|l| l.status.as_str()) {
            Some("sent") => "was made".to_owned(),
            Some("failed") => "was made and failed".to_owned(),
            _ => "was made, and whether it happened is not known yet".to_owned(),
        },
        _ if status.approvals.needed > 1 => format!(
            "waits for a person's review (approved by {} of {})",
            status.approvals.approved, status.approvals.needed
        ),
        Standing::PendingReview => "waits for a person's review".to_owned(),
    }
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}
