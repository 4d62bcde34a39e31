//! `send-once mcp`: the review queue as MCP tools for an agent that proposes sends.
//!
//! An agent submits a draft (the key made from channel, recipient, intent and window,
//! as `send-once key` makes it), asks what became of it, lists, withdraws its own, and
//! pushes new facts. A person approves or rejects in the TUI or the command line: no
//! tool here does. A reviewer's edit is never silently replaced: a submission revises
//! a draft whose current revision someone else wrote only when it names that revision
//! as the one it builds on.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod dispatch;
mod dispatching;

pub use dispatch::{DispatchAnswer, DispatchDraft, SendCommands};
pub use dispatching::Dispatching;

use super::status::{DraftStatus, Standing};
use crate::ledger::Ledger;
use crate::ledger::key::{self, Window};
use crate::review::quorum::same_person;
use crate::review::{Base, Draft, DraftState, Review, ReviewError, Submission, Verdict};

/// The longest `draft_status` waits: under the 60 seconds after which common clients
/// give up on a request.
pub const MAX_WAIT_SECONDS: u64 = 50;

/// How often a waiting `draft_status` reads the draft again.
const POLL: Duration = Duration::from_millis(200);

/// How often a waiting `draft_status` tells a client that asked for progress that it
/// is still waiting, so that clients which reset their timeout on progress do.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The most drafts `list_drafts` gives at once.
const MAX_LIST: i64 = 100;

/// The MCP server an agent talks to: the ledger's review queue, and who submits.
pub struct AgentServer {
    review: Arc<Review>,
    ledger: Arc<Ledger>,
    by: Option<String>,
    send: SendCommands,
    in_flight: Arc<super::in_flight::InFlight>,
    /// Its dispatches running now, which a stop that cannot wait for them ends.
    dispatching: Arc<Dispatching>,
    /// Its dispatches whose outcome the ledger could not record.
    unrecorded: Arc<super::unrecorded::Unrecorded>,
    /// Its dispatches whose send went out and that the ledger could not record, to be
    /// written when it can and named at the server's end until then.
    unsettled: Arc<super::left::Unsettled>,
    /// Set when the session stops: a long poll answers at once with the state it has.
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
    tool_router: ToolRouter<AgentServer>,
}

/// `submit_draft`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitDraft {
    /// How it is sent: email, sms, chat, webhook, payment… Part of the key.
    pub channel: String,
    /// Who it goes to (an address, a number, a URL). Part of the key, normalised as
    /// `send-once key` does: one recipient, one spelling.
    pub to: String,
    /// What the send is for, in a few stable words (`invoice-2026-09 reminder`). Part of
    /// the key: the same intent to the same recipient is the same send.
    pub intent: String,
    /// A period in which the send happens once (`2026-09`, `2026-W40`): the same send
    /// may happen again in another window. Part of the key.
    #[serde(default)]
    pub window: Option<String>,
    /// What the send command receives, as JSON (the message, the amount).
    pub payload: Value,
    /// What you relied on when drafting it (a balance, a plan), as a JSON object: a
    /// reviewer sees whether it still holds. Left out of a revision, the earlier
    /// revision's facts are kept; `{}` says there are none.
    #[serde(default)]
    pub facts: Option<Map<String, Value>>,
    /// Anything else to keep with the draft and the ledger entry, as a JSON object.
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    /// The revision this submission builds on. Needed to revise a draft whose current
    /// revision a reviewer wrote (draft_status says `edited_by_reviewer`); a
    /// submission without it never replaces their edit.
    #[serde(default)]
    pub base_revision: Option<i64>,
}

/// What `submit_draft` did.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    /// The draft's id, for draft_status.
    pub draft_id: i64,
    /// The send key.
    pub key: String,
    /// The revision this submission is (or, when nothing changed, the current one).
    pub revision: i64,
    /// Where the draft stands now, as draft_status says it: pending_review for a
    /// revision that waits, even of a draft approved before (its approval covered an
    /// earlier revision); approved only while an approval covers this revision.
    pub state: Standing,
    /// The state as the queue stores it (queued, approved, …).
    pub queue_state: String,
    /// Distinct people who must approve it.
    pub approvals_needed: i64,
    /// False when it revised the open draft for the same key.
    pub new_draft: bool,
    /// True when it repeated the current revision, so nothing was written.
    pub unchanged: bool,
    /// What to do next, in a sentence.
    pub next: String,
}

/// Which draft a tool is about.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusQuery {
    /// The draft's id, as submit_draft gave it.
    #[serde(default)]
    pub draft_id: Option<i64>,
    /// Or the send key: its newest draft.
    #[serde(default)]
    pub key: Option<String>,
    /// Wait up to this many seconds (at most 50) for the draft to change before
    /// answering; it answers as soon as it does.
    #[serde(default)]
    pub wait_seconds: Option<f64>,
}

/// `list_drafts`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuery {
    /// Only drafts in this state: queued, approved, rejected, withdrawn, dispatched.
    #[serde(default)]
    pub state: Option<String>,
    /// At most this many, newest first (default 20, at most 100).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// The drafts `list_drafts` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DraftList {
    /// Newest first.
    pub drafts: Vec<DraftStatus>,
}

/// `withdraw_draft`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WithdrawDraft {
    /// The draft to take back (one you submitted).
    pub draft_id: i64,
    /// Why, for the decision log.
    #[serde(default)]
    pub note: Option<String>,
    /// The same as `note`, by the name a reviewer's rejection gives it: give one of
    /// the two. (A hidden alias of `note` was not in the schema, and both together
    /// were refused as a note given twice: AK7, AL8.)
    #[serde(default)]
    pub reason: Option<String>,
}

/// `update_facts`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateFacts {
    /// The draft (one you submitted).
    pub draft_id: i64,
    /// The facts as they are now, a JSON object: a reviewer sees what changed since
    /// the draft was made.
    pub facts: Map<String, Value>,
}

#[tool_router(router = tool_router)]
impl AgentServer {
    /// A server over `review` (and `ledger`, the same store), whose drafts are
    /// submitted by `by`, else by the name the client gives when it connects.
    /// `dispatch_draft` is offered only when the operator gave `send` commands.
    pub fn new(
        review: Review,
        ledger: Ledger,
        by: Option<String>,
        send: SendCommands,
    ) -> AgentServer {
        let mut tool_router = Self::tool_router();
        if send.0.is_empty() {
            tool_router.remove_route("dispatch_draft");
        }
        AgentServer {
            review: Arc::new(review),
            ledger: Arc::new(ledger),
            by,
            send,
            in_flight: Arc::default(),
            dispatching: Arc::default(),
            unrecorded: Arc::default(),
            unsettled: Arc::default(),
            stopping: Arc::new(tokio::sync::watch::Sender::new(false)),
            tool_router,
        }
    }

    /// What tells the server that its session is stopping: its long polls answer at
    /// once, so that the session's end waits for no one's decision.
    pub fn stopper(&self) -> impl Fn() + Send + Sync + 'static {
        let stopping = Arc::clone(&self.stopping);
        move || {
            stopping.send_replace(true);
        }
    }

    /// The dispatches still running, for shutdown.
    pub fn in_flight(&self) -> Arc<super::in_flight::InFlight> {
        Arc::clone(&self.in_flight)
    }

    /// Its dispatches running now, for a stop that cannot wait for them.
    pub fn dispatching(&self) -> Arc<Dispatching> {
        Arc::clone(&self.dispatching)
    }

    /// Its ledger, for what its end records.
    pub fn ledger(&self) -> Arc<Ledger> {
        Arc::clone(&self.ledger)
    }

    /// Its sends made that the ledger has not recorded yet, for its end.
    pub fn unsettled(&self) -> Arc<super::left::Unsettled> {
        Arc::clone(&self.unsettled)
    }

    #[tool(
        description = "Send an approved draft, once, through the send command the operator configured for its channel. Refused when it is not approved, its approval ran out, its payload or facts changed since, or it was rejected. Asking again answers from the ledger: it is never sent twice.",
        annotations(
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn dispatch_draft(
        &self,
        Parameters(args): Parameters<DispatchDraft>,
    ) -> Result<Json<DispatchAnswer>, String> {
        let guard = self.in_flight.start();
        let ticket = self.dispatching.start(args.draft_id);
        let (review, ledger, send, unrecorded, unsettled) = (
            Arc::clone(&self.review),
            Arc::clone(&self.ledger),
            self.send.clone(),
            Arc::clone(&self.unrecorded),
            Arc::clone(&self.unsettled),
        );
        // Its own task: a client that gives up, or a session that ends, does not cut
        // the send in half; shutdown waits for it (`in_flight`).
        let task = tokio::spawn(async move {
            let _guard = guard;
            ticket
                .run(dispatch::dispatch(
                    &review,
                    &ledger,
                    &send,
                    (&unrecorded, &unsettled),
                    args.draft_id,
                ))
                .await
        });
        match task.await {
            Ok(Some(answer)) => answer.map(Json),
            Ok(None) => Err(format!(
                "the server stopped before the dispatch of draft {} ended: its send command was stopped, and whether it went out is not known. Ask draft_status later; a person settles it",
                args.draft_id
            )),
            Err(e) => Err(format!("the dispatch stopped: {e}")),
        }
    }

    #[tool(
        description = "Propose an outbound send for a person to review. It is NOT sent: a person approves or rejects it. The same channel, recipient, intent and window make the same key, so submitting again revises the open draft instead of making a second one. Returns the draft id; ask draft_status what became of it.",
        annotations(
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn submit_draft(
        &self,
        Parameters(args): Parameters<SubmitDraft>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Submitted>, String> {
        let by = Some(self.submitter(&context)?);
        let submission = submission(args, by)?;
        let key = submission.key.clone();
        if let Base::Named(Some(base)) = submission.base {
            self.open_draft_at(&key, base).await?;
        }
        let submitted = self
            .review
            .submit(submission)
            .await
            .map_err(|e| e.to_string())?;
        // Read back: where it stands is the head's, with its approval and expiry.
        let (_, now) = self.status(submitted.id).await?;
        let next = if submitted.unchanged {
            format!(
                "Draft {} already had this payload and these facts: nothing changed. It has not been sent; ask draft_status.",
                submitted.id
            )
        } else {
            // A revision of an approved draft keeps the draft's state, but not its
            // approval, which was for the revision before.
            let again = if submitted.state == crate::review::DraftState::Approved {
                " Its approval was for an earlier revision: a person must approve this one."
            } else {
                ""
            };
            format!(
                "Draft {} waits for a person's review; it has not been sent.{again} Ask draft_status with draftId {} (waitSeconds waits for a decision); do not report it as sent.",
                submitted.id, submitted.id
            )
        };
        Ok(Json(Submitted {
            draft_id: submitted.id,
            key,
            revision: submitted.revision,
            state: now.state,
            queue_state: submitted.state.as_str().to_owned(),
            approvals_needed: submitted.required,
            new_draft: submitted.new_draft,
            unchanged: submitted.unchanged,
            next,
        }))
    }

    #[tool(
        description = "What became of a draft: pending review, approved (N of M), rejected with the reason, edited by a reviewer, dispatched, sent elsewhere, expired; who decided; the ledger's status and provider id once sent; the current revision's payload, and the fields a reviewer changed (editedFields). Give draftId or key; waitSeconds (at most 50) waits for a change and answers as soon as there is one.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn draft_status(
        &self,
        Parameters(query): Parameters<StatusQuery>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<DraftStatus>, String> {
        let id = self.draft_id(&query).await?;
        let seconds = query.wait_seconds.unwrap_or(0.0);
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(format!(
                "waitSeconds {seconds} is not a number of seconds from 0 to {MAX_WAIT_SECONDS}"
            ));
        }
        let wait = Duration::from_secs_f64(seconds.min(MAX_WAIT_SECONDS as f64));
        if !wait.is_zero() {
            let (seen, _) = self.status(id).await?;
            self.wait_for_change(id, seen, wait, &context).await?;
        }
        // Read once, after the wait (which looks at the draft's head alone): the state
        // and the content are of one reading.
        let draft = self.review.draft(id).await.map_err(text)?;
        let entry = self.review.ledger_entry(&draft.key).await.map_err(text)?;
        let status = DraftStatus::of(&draft, entry.as_ref(), self.review.now());
        Ok(Json(status.with_content(&draft)))
    }

    #[tool(
        description = "The newest drafts with their states, newest first. state filters by queue state (queued, approved, rejected, withdrawn, dispatched); limit is at most 100 (default 20).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_drafts(
        &self,
        Parameters(query): Parameters<ListQuery>,
    ) -> Result<Json<DraftList>, String> {
        let state = match query.state.as_deref() {
            None => None,
            Some(word) => Some(DraftState::parse(word).ok_or_else(|| {
                format!(
                    "state {} is not a draft state: use queued, approved, rejected, withdrawn or dispatched",
                    crate::text::visible_inline(word)
                )
            })?),
        };
        let limit = query.limit.unwrap_or(20);
        if !(1..=MAX_LIST).contains(&limit) {
            return Err(format!(
                "limit {limit} is out of range: give 1 to {MAX_LIST}"
            ));
        }
        let now = self.review.now();
        let mut drafts = Vec::new();
        for draft in self.review.recent(state, limit).await.map_err(text)? {
            let entry = self.review.ledger_entry(&draft.key).await.map_err(text)?;
            drafts.push(DraftStatus::of(&draft, entry.as_ref(), now));
        }
        Ok(Json(DraftList { drafts }))
    }

    #[tool(
        description = "Take back a draft you submitted, before it is sent. It is never sent after that.",
        annotations(
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn withdraw_draft(
        &self,
        Parameters(args): Parameters<WithdrawDraft>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<DraftStatus>, String> {
        let note = match (args.note, args.reason) {
            (Some(_), Some(_)) => {
                return Err("give note or reason, not both: they are the same field".into());
            }
            (note, reason) => note.or(reason),
        };
        let by = self.own_draft(args.draft_id, &context).await?;
        self.review
            .decide(args.draft_id, Verdict::Withdraw, by, note)
            .await
            .map_err(text)?;
        Ok(Json(self.status(args.draft_id).await?.1))
    }

    #[tool(
        description = "Record the facts as they are now for a draft you submitted (a balance, a plan): a reviewer sees what changed since it was drafted, and an approval made on other facts does not send it.",
        annotations(
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn update_facts(
        &self,
        Parameters(args): Parameters<UpdateFacts>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<DraftStatus>, String> {
        self.own_draft(args.draft_id, &context).await?;
        self.review
            .record_facts(args.draft_id, args.facts)
            .await
            .map_err(text)?;
        Ok(Json(self.status(args.draft_id).await?.1))
    }
}

impl AgentServer {
    /// Who submits: `--by`, else the client's name from `initialize` (or, under
    /// 2026-07-28, the request's own).
    fn submitter(&self, context: &RequestContext<RoleServer>) -> Result<String, String> {
        super::client_name::submitter(self.by.as_deref(), context)
    }

    /// Refuses a `baseRevision` that names a revision of no open draft: there is
    /// nothing to build on, and a new draft would be made as if it were a revision.
    async fn open_draft_at(&self, key: &str, base: i64) -> Result<(), String> {
        let newest = crate::review::dispatch::newest_draft(&self.review, key)
            .await
            .map_err(text)?;
        let open = match newest {
            Some(id) => {
                Some(self.review.head(id).await.map_err(text)?).filter(|d| d.state.is_open())
            }
            None => None,
        };
        match open {
            Some(draft) if base <= draft.revision && base >= 1 => Ok(()),
            Some(draft) => Err(format!(
                "baseRevision {base} is not a revision of draft {} (it is at revision {})",
                draft.id, draft.revision
            )),
            None => Err(format!(
                "baseRevision {base} names a revision, but this key has no open draft to build on; leave baseRevision out to submit a new draft"
            )),
        }
    }

    /// Who is asking, when draft `id` is theirs to change: only its submitter is.
    async fn own_draft(
        &self,
        id: i64,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<String>, String> {
        let by = Some(self.submitter(context)?);
        let draft = self.review.head(id).await.map_err(text)?;
        own(&draft, by.as_deref())?;
        Ok(by)
    }

    async fn draft_id(&self, query: &StatusQuery) -> Result<i64, String> {
        match (query.draft_id, query.key.as_deref()) {
            (Some(id), None) => Ok(id),
            (None, Some(key)) => {
                key::check_key(key).map_err(|e| format!("key: {e}"))?;
                crate::review::dispatch::newest_draft(&self.review, key)
                    .await
                    .map_err(text)?
                    .ok_or_else(|| {
                        format!(
                            "no draft was ever submitted under key {}",
                            crate::text::visible_inline(key)
                        )
                    })
            }
            _ => Err("give draftId or key, one of them".to_owned()),
        }
    }

    /// The draft's state now, with what tells a change from no change: its version
    /// (every revision and decision bumps it) and the ledger's status for its key.
    async fn status(&self, id: i64) -> Result<((i64, Option<String>), DraftStatus), String> {
        let draft = self.review.head(id).await.map_err(text)?;
        let entry = self.review.ledger_entry(&draft.key).await.map_err(text)?;
        let status = DraftStatus::of(&draft, entry.as_ref(), self.review.now());
        let seen = (
            draft.version,
            status.ledger.as_ref().map(|l| l.status.clone()),
        );
        Ok((seen, status))
    }

    async fn wait_for_change(
        &self,
        id: i64,
        seen: (i64, Option<String>),
        wait: Duration,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), String> {
        let started = tokio::time::Instant::now();
        let token = context.meta.get_progress_token();
        let mut told = started;
        let mut stopping = self.stopping.subscribe();
        while started.elapsed() < wait {
            tokio::select! {
                () = context.ct.cancelled() => break,
                _ = stopping.wait_for(|stopping| *stopping) => break,
                () = tokio::time::sleep(POLL) => {}
            }
            let (now_seen, _) = self.status(id).await?;
            if now_seen != seen {
                return Ok(());
            }
            if let Some(token) = &token
                && told.elapsed() >= PROGRESS_EVERY
            {
                told = tokio::time::Instant::now();
                let mut progress =
                    ProgressNotificationParam::new(token.clone(), started.elapsed().as_secs_f64());
                progress.total = Some(wait.as_secs_f64());
                progress.message = Some(format!("waiting for a decision on draft {id}"));
                // A client that went away ends the wait at its cancellation instead.
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        Ok(())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AgentServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info.name = "send-once".into();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info.instructions = Some(
            "Outbound sends (email, SMS, chat, webhooks, payments) go through a person here. \
             submit_draft proposes one; it is not sent until a person approves it and it is \
             dispatched. Ask draft_status what became of it. Never report a draft as sent \
             unless draft_status says it was sent; never send it another way."
                .into(),
        );
        info
    }
}

fn text(e: ReviewError) -> String {
    e.to_string()
}

/// The submission `args` make: the key as `send-once key` makes it (a look-alike
/// spelling refused), the payload's JSON text, and the meta with what the key was made
/// of, so the entry says who and what it is about.
fn submission(args: SubmitDraft, by: Option<String>) -> Result<Submission, String> {
    key::check_key_fields(
        &args.channel,
        &args.to,
        &args.intent,
        args.window.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    let window = args.window.clone().map(Window::Text);
    let key = key::send_key(&args.channel, &args.to, &args.intent, window.as_ref())
        .map_err(|e| e.to_string())?;
    let mut meta = args.meta.unwrap_or_default();
    // The proxy's marks on a call it held: a draft submitted here must not pass for one.
    if let Some(reserved) = ["heldBy", "upstream", "tool"]
        .iter()
        .find(|f| meta.contains_key(**f))
    {
        return Err(format!(
            "meta's {reserved} is reserved for calls held by send-once mcp proxy; leave it out"
        ));
    }
    let derived = [
        ("channel", Some(args.channel)),
        ("to", Some(args.to)),
        ("intent", Some(args.intent)),
        ("window", args.window),
    ];
    let derived: Map<String, Value> = derived
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), Value::String(value?))))
        .collect();
    crate::review::meta::check(
        &meta,
        &derived,
        crate::review::meta::Door {
            meta: "meta",
            argument: "",
        },
    )?;
    for (name, value) in derived {
        meta.entry(name).or_insert(value);
    }
    let payload = serde_json::to_string(&args.payload).map_err(|e| e.to_string())?;
    Ok(Submission {
        key,
        payload,
        facts: args.facts,
        recheck: None,
        meta: Some(meta),
        by,
        approvals: None,
        base: Base::Named(args.base_revision),
    })
}

/// Refuses a change to a draft someone else submitted.
fn own(draft: &Draft, by: Option<&str>) -> Result<(), String> {
    match (draft.submitted_by.as_deref(), by) {
        (Some(first), Some(by)) if same_person(first, by) => Ok(()),
        (None, None) => Ok(()),
        (first, _) => Err(format!(
            "draft {} was submitted by {}, not by you: only its submitter changes it",
            draft.id,
            crate::text::visible_inline(first.unwrap_or("nobody named"))
        )),
    }
}
