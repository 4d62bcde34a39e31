//! `send-once mcp proxy`: the ledger in front of any MCP server.
//!
//! The agent connects to the proxy; the proxy starts the upstream server, offers its
//! tools (and resources and prompts) as its own, and gates each `tools/call` by the
//! policy ([`super::policy`]): `pass` forwards it, `once` claims it in the ledger
//! first ([`once`]), `hold` queues it as a draft for a person ([`hold`]). One tool is
//! the proxy's own, `send_once_status`, which says what became of a held call and,
//! once it is approved, makes it.

pub mod hold;
pub mod lane;
pub mod once;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ErrorData, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value};

use super::call_key::{CallKey, call_key};
use super::in_flight::InFlight;
use super::policy::{Mode, Policy, ToolRule};
use crate::ledger::Ledger;
use crate::provider::SendOptions;
use crate::review::Review;
use once::{ForwardCall, Via, refusal};
use upstream::{Downstream, Forwarded, Upstream};

/// The name of the proxy's own tool, unless `--status-tool` renames it.
pub const STATUS_TOOL: &str = "send_once_status";

/// What the proxy is told at start.
pub struct ProxyConfig {
    /// The policy, read and checked.
    pub policy: Policy,
    /// The ledger its `once` calls are claimed in.
    pub ledger: Arc<Ledger>,
    /// The review queue its `hold` calls wait in (None: the ledger keeps none, and the
    /// policy holds nothing).
    pub review: Option<Arc<Review>>,
    /// How a person names the ledger in a command (redacted).
    pub ledger_name: String,
    /// How long a forwarded call may take when its rule sets no timeout.
    pub timeout: Duration,
    /// The name of the proxy's own status tool.
    pub status_tool: String,
    /// Whether the upstream's `readOnlyHint` lets a tool the policy does not name pass.
    pub trust_annotations: bool,
    /// Who submits held calls (else the client's name).
    pub by: Option<String>,
}

impl ProxyConfig {
    /// How long a call under `rule` may take: its own timeout, else the proxy's.
    fn limit(&self, rule: &ToolRule) -> Duration {
        rule.timeout.unwrap_or(self.timeout)
    }
}

/// The proxy, as the agent's MCP server.
#[derive(Clone)]
pub struct ProxyServer {
    config: Arc<ProxyConfig>,
    upstream: Arc<Upstream>,
    downstream: Downstream,
    in_flight: Arc<InFlight>,
    /// Its calls whose outcome the ledger could not record.
    unrecorded: Arc<crate::mcp::unrecorded::Unrecorded>,
    /// Its calls found unknown, named at its end while still unsettled.
    unsettled: Arc<crate::mcp::left::Unsettled>,
}

impl ProxyServer {
    /// A proxy for `upstream` (connected, with `downstream` its relay's target).
    pub fn new(config: ProxyConfig, upstream: Upstream, downstream: Downstream) -> ProxyServer {
        ProxyServer {
            config: Arc::new(config),
            upstream: Arc::new(upstream),
            downstream,
            in_flight: Arc::new(InFlight::default()),
            unrecorded: Arc::default(),
            unsettled: Arc::default(),
        }
    }

    /// Its calls found unknown, for its end.
    pub fn unsettled(&self) -> Arc<crate::mcp::left::Unsettled> {
        Arc::clone(&self.unsettled)
    }

    /// The calls still in flight, for shutdown.
    pub fn in_flight(&self) -> Arc<InFlight> {
        Arc::clone(&self.in_flight)
    }

    /// The upstream's connection, held by whoever must keep it open after the agent
    /// leaves, until the calls in flight are answered.
    pub fn upstream(&self) -> Arc<Upstream> {
        Arc::clone(&self.upstream)
    }

    /// The rule a call of `tool` is gated by: its own, or the default, which a trusted
    /// `readOnlyHint` turns into `pass`.
    fn rule(&self, tool: &str) -> ToolRule {
        rule(&self.config, &self.upstream.tools, tool)
    }

    /// Which calls the lane may take: those that pass straight to the upstream, with
    /// each one's limit, and `once` calls to the proxy's gate ([`ProxyServer::gate`]);
    /// held calls and the proxy's own tool go through rmcp.
    pub fn routes(&self) -> lane::Routes {
        let config = Arc::clone(&self.config);
        fn route(config: &ProxyConfig, rule: ToolRule) -> lane::Route {
            match rule.mode {
                Mode::Pass => lane::Route::Pass(config.limit(&rule)),
                Mode::Once => lane::Route::Gated,
                Mode::Hold => lane::Route::Rmcp,
            }
        }
        // Decided once per tool the upstream listed, not per call; a name it did not
        // list is looked up when it comes.
        let listed: std::collections::HashMap<String, lane::Route> = self
            .upstream
            .tools
            .iter()
            .map(|t| (t.name.to_string(), route(&config, self.rule(&t.name))))
            .collect();
        Box::new(move |tool: &str| {
            if tool == config.status_tool {
                return lane::Route::Rmcp;
            }
            match listed.get(tool) {
                Some(route) => *route,
                None => route(&config, rule(&config, &[], tool)),
            }
        })
    }

    /// The gate for the `once` calls the lane takes: each is checked, keyed, claimed
    /// and forwarded as on rmcp's path, and its answer shaped for the version the
    /// agent's session negotiated, as rmcp's server shapes its own.
    pub fn gate(&self) -> lane::Gate {
        let server = self.clone();
        Box::new(move |call: lane::GatedCall| {
            let server = server.clone();
            Box::pin(async move {
                let answer = server.gated(call).await;
                let current = server
                    .downstream
                    .get()
                    .and_then(|agent| agent.peer_info())
                    .is_some_and(|info| {
                        info.protocol_version.as_str()
                            >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
                    });
                answer.map(|result| {
                    let mut result = rmcp::model::ServerResult::CallToolResult(result);
                    if current {
                        result.fill_missing_cache_hints();
                    } else {
                        result.strip_result_type_for_legacy_peer();
                        result.strip_non_object_output_for_legacy_peer();
                    }
                    result
                })
            })
        })
    }

    /// A `once` call the lane took, answered.
    async fn gated(&self, call: lane::GatedCall) -> Result<CallToolResult, ErrorData> {
        let lane::GatedCall { params, forward } = call;
        let (rule, limit, key) = match self.keyed(&params) {
            Ok(keyed) => keyed,
            Err(why) => return Ok(not_forwarded(&why)),
        };
        self.claimed(&params.name, &rule, key, Via::Lane(forward), limit)
            .await
    }

    /// The agent's name: `--by`, else the name its client gave when the session
    /// started, when that is one a person can read.
    fn agent_name(&self) -> Option<String> {
        if let Some(by) = &self.config.by {
            return Some(by.clone());
        }
        let agent = self.downstream.get()?.peer_info()?;
        super::client_name::readable(Some(agent.client_info.name.clone())).ok()
    }

    /// What `tool`'s input schema declares, when it allows nothing else.
    pub fn declared(&self, tool: &str) -> Option<Vec<String>> {
        let found = self.upstream.tools.iter().find(|t| t.name == tool)?;
        super::call_key::declared_properties(&found.input_schema)
    }

    fn remember(&self, context: &RequestContext<RoleServer>) {
        let _ = self.downstream.set(context.peer.clone());
    }

    async fn pass(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        limit: Duration,
    ) -> Result<CallToolResponse, ErrorData> {
        let _guard = self.in_flight.start();
        match self
            .upstream
            .call(params, Some(context.meta.clone()), limit)
            .await
        {
            Forwarded::Done(result) | Forwarded::ToolError(result) => Ok(result.into()),
            Forwarded::NotRun(error) => Err(error),
            Forwarded::Lost(why) => Ok(refusal(why).into()),
            Forwarded::TimedOut => Ok(refusal(upstream::not_in_time(limit, false)).into()),
            Forwarded::Gone => Ok(refusal(
                "the upstream server has exited, so the call was not sent; the proxy must be restarted".to_owned(),
            )
            .into()),
        }
    }

    async fn once(
        &self,
        params: CallToolRequestParams,
        rule: ToolRule,
        key: CallKey,
        context: &RequestContext<RoleServer>,
        limit: Duration,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let guard = self.in_flight.start();
        let tool = params.name.clone();
        // Whether the agent still waits, for the call's progress.
        let waits = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let via = Via::Rmcp {
            upstream: self.upstream.caller(),
            params: Box::new(params),
            meta: Some(context.meta.clone()),
            waits: Arc::clone(&waits),
        };
        // Its own task: an agent that gives up (a client's 60-second timeout, a
        // cancellation) does not stop the call, whose answer is still recorded.
        let task = tokio::spawn(async move {
            let _guard = guard;
            server.claimed(&tool, &rule, key, via, limit).await
        });
        once::answered_or_left(task, context, &waits)
            .await
            .map(Into::into)
    }

    /// Claims a `once` call of `tool` under `key`, forwards it `via` there, and gives
    /// the agent's answer.
    async fn claimed(
        &self,
        tool: &str,
        rule: &ToolRule,
        key: CallKey,
        via: Via,
        limit: Duration,
    ) -> Result<CallToolResult, ErrorData> {
        let mut meta = entry_meta(&self.config.policy.upstream, tool, rule, &key);
        // Who made the call, for whoever settles it if it ends unknown (shift AD6).
        if let Some(agent) = self.agent_name() {
            meta.insert("agent".into(), agent.into());
        }
        let options = SendOptions::builder()
            .meta(meta)
            .limit(limit)
            .verify(rule.verify.is_some());
        let options = match options.build() {
            Ok(options) => options,
            Err(e) => return Ok(refusal(format!("The call was not made: {e}"))),
        };
        let forward = ForwardCall::new(via, limit, rule.error)
            .verified_by(rule.verify.clone())
            .noting_unrecorded_in(Arc::clone(&self.unrecorded))
            .noting_unknown_in(Arc::clone(&self.unsettled))
            .with_whole(key.whole.clone());
        once::once(
            Arc::clone(&self.config.ledger),
            key.key,
            forward,
            options,
            self.config.ledger_name.clone(),
        )
        .await
    }

    /// The rule a gated call of `params` is held to, its limit and its key; or why
    /// the call is refused before anything is claimed.
    fn keyed(
        &self,
        params: &CallToolRequestParams,
    ) -> Result<(ToolRule, Duration, CallKey), String> {
        let rule = self.rule(&params.name);
        let limit = self.config.limit(&rule);
        let none = Map::new();
        let arguments = params.arguments.as_ref().unwrap_or(&none);
        if let Some(tool) = self.upstream.tools.iter().find(|t| t.name == params.name)
            && let Err(why) = super::call_key::check_arguments(&tool.input_schema, arguments)
        {
            return Err(why);
        }
        let declared = self.declared(&params.name);
        let key = call_key(
            &self.config.policy.upstream,
            &params.name,
            arguments,
            &rule,
            self.config.ledger.now(),
            declared.as_deref(),
        )?;
        Ok((rule, limit, key))
    }
}

/// The agent's answer to a call refused before anything was claimed, and why.
fn not_forwarded(why: &str) -> CallToolResult {
    refusal(format!(
        "send-once refused the call, and it was not forwarded: {why}"
    ))
}

/// Refuses to start when the upstream has a tool named `status_tool`: the agent could
/// not tell it from the proxy's own.
pub fn check_status_tool(upstream: &Upstream, status_tool: &str) -> Result<(), String> {
    if upstream.tools.iter().any(|t| t.name == status_tool) {
        return Err(format!(
            "the upstream has a tool named {} too, which the proxy's own would hide; rename the proxy's with --status-tool",
            crate::text::visible_inline(status_tool)
        ));
    }
    Ok(())
}

/// The rule a call of `tool` is gated by, among the upstream's `tools`.
fn rule(config: &ProxyConfig, tools: &[Tool], tool: &str) -> ToolRule {
    let mut rule = config.policy.rule(tool);
    if config.trust_annotations
        && !config.policy.tools.contains_key(tool)
        && tools.iter().any(|t| {
            t.name == tool
                && t.annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false)
        })
    {
        rule.mode = Mode::Pass;
    }
    rule
}

/// The entry's meta for a call: the channel, recipient and intent a person reads, and
/// the tool and upstream it was.
pub fn entry_meta(
    upstream: &str,
    tool: &str,
    rule: &ToolRule,
    key: &CallKey,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("channel".into(), rule.channel.clone().into());
    if let Some(to) = &key.to {
        meta.insert("to".into(), to.clone().into());
    }
    meta.insert(
        "intent".into(),
        key.intent.clone().unwrap_or_else(|| tool.to_owned()).into(),
    );
    if let Some(window) = &key.window {
        meta.insert("window".into(), window.clone().into());
    }
    meta.insert("tool".into(), tool.into());
    meta.insert("upstream".into(), upstream.into());
    // What made it this call, shortened: without a policy's intent, a person who
    // settles an unknown call tells it from the tool's other calls by these.
    let arguments: String = key.preimage.chars().take(ARGUMENTS_SHOWN).collect();
    let cut = if arguments.len() < key.preimage.len() {
        "…"
    } else {
        ""
    };
    meta.insert("call".into(), format!("{arguments}{cut}").into());
    if let Some(whole) = &key.whole {
        meta.insert(
            super::call_key::WHOLE_ARGUMENTS.into(),
            whole.clone().into(),
        );
    }
    meta
}

/// How much of a call's key text an entry keeps for a person to read.
const ARGUMENTS_SHOWN: usize = 300;

impl ServerHandler for ProxyServer {
    fn get_info(&self) -> ServerConfig {
        let theirs = &self.upstream.info;
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        capabilities.resources = theirs.capabilities.resources.clone();
        capabilities.prompts = theirs.capabilities.prompts.clone();
        capabilities.completions = theirs.capabilities.completions.clone();
        capabilities.logging = theirs.capabilities.logging.clone();
        if let Some(tools) = &mut capabilities.tools {
            tools.list_changed = theirs
                .capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed);
        }
        let mut info = ServerConfig::new(capabilities);
        info.server_info.name = format!("send-once proxy for {}", self.config.policy.upstream);
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info.instructions = Some(format!(
            "{}Calls go through send-once: a call that sends is made at most once, and a call the operator holds waits for a person's approval (the answer says so; it is not done until {} says it was made).",
            theirs
                .instructions
                .as_deref()
                .map(|i| format!("{i}\n\n"))
                .unwrap_or_default(),
            self.config.status_tool
        ));
        info
    }

    /// The agent is known from its `initialize` on: a `once` call that is the
    /// session's first request goes through the lane, not rmcp, and would otherwise
    /// be claimed before rmcp had heard `notifications/initialized` (AH11: the first
    /// call's entry had no agent).
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.remember(&context);
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let _ = self.downstream.set(context.peer.clone());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.remember(&context);
        let mut tools: Vec<Tool> = self.relay(self.upstream.peer().list_all_tools()).await?;
        tools.retain(|t| t.name != self.config.status_tool.as_str());
        tools.push(hold::status_tool(&self.config.status_tool));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.remember(&context);
        if params.name == self.config.status_tool.as_str() {
            return hold::status(self, params, &context).await.map(Into::into);
        }
        let rule = self.rule(&params.name);
        if rule.mode == Mode::Pass {
            let limit = self.config.limit(&rule);
            return self.pass(params, &context, limit).await;
        }
        let (rule, limit, key) = match self.keyed(&params) {
            Ok(keyed) => keyed,
            Err(why) => return Ok(not_forwarded(&why).into()),
        };
        match rule.mode {
            Mode::Once => self.once(params, rule, key, &context, limit).await,
            _ => hold::held(self, params, &rule, key, &context)
                .await
                .map(Into::into),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.relay(self.upstream.peer().list_resources(request))
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.relay(self.upstream.peer().list_resource_templates(request))
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.relay(self.upstream.peer().read_resource(request))
            .await
            .map(Into::into)
    }

    // Subscriptions and logging are MCP 2025-11-25's, what agents negotiate today;
    // rmcp marks them deprecated for later versions (SEP-2577).
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.relay(self.upstream.peer().subscribe(request)).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.relay(self.upstream.peer().unsubscribe(request)).await
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.relay(self.upstream.peer().set_level(request)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.relay(self.upstream.peer().complete(request)).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.relay(self.upstream.peer().list_prompts(request)).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.relay(self.upstream.peer().get_prompt(request))
            .await
            .map(Into::into)
    }
}

impl ProxyServer {
    /// The upstream's answer to a request relayed as it is (a list, a read), or an
    /// error once the proxy's limit has passed: an upstream that has stopped answering
    /// must not hold the agent's request, nor the room it takes, for ever.
    async fn relay<T>(
        &self,
        asked: impl Future<Output = Result<T, rmcp::service::ServiceError>>,
    ) -> Result<T, ErrorData> {
        let limit = self.config.timeout;
        match tokio::time::timeout(limit, asked).await {
            Ok(answer) => answer.map_err(relayed),
            Err(_) => Err(ErrorData::internal_error(
                format!(
                    "the upstream did not answer within {}",
                    crate::provider::Limit::new(limit).written
                ),
                None,
            )),
        }
    }
}

/// The upstream's answer to a relayed request, as the agent's error.
fn relayed(e: rmcp::service::ServiceError) -> ErrorData {
    match e {
        rmcp::service::ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(format!("the upstream did not answer: {other}"), None),
    }
}
