//! The upstream MCP server the proxy stands in front of: started as a child process,
//! spoken to as a client, its notifications (progress, changed lists) relayed to the
//! agent, and each call's answer sorted by what it says about the tool having acted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ErrorCode, ErrorData, Implementation, ProgressNotificationParam, ProgressToken,
    RequestMetaObject, ResourceUpdatedNotificationParam, ServerPeerInfo, ServerResult, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{ClientHandler, Peer, RoleClient, RoleServer, ServiceExt};

/// Where the agent is, once it has connected: what the upstream tells the proxy is
/// relayed there.
pub type Downstream = Arc<OnceLock<Peer<RoleServer>>>;

/// The progress tokens of the calls rmcp's client forwarded, which it numbers itself
/// whatever the agent gave, each with the agent's own (none if it gave none). The
/// lane's calls carry tokens of the lane's upstream and the lane relays their progress
/// itself; any other progress is for no call the agent is waiting on.
pub type ProgressNames = Arc<Mutex<HashMap<ProgressToken, ProgressName>>>;

/// The agent's token for a call rmcp's client forwarded, and the lock that keeps its
/// progress before its answer: each relay of it holds the lock to read while it sends,
/// and the call, once answered, takes it to write before it lets its name go, so that
/// nothing of its progress reaches the agent after its answer.
#[derive(Clone)]
pub struct ProgressName {
    agents: Option<ProgressToken>,
    relaying: Arc<tokio::sync::RwLock<()>>,
    /// Whether the agent still waits for the call: once it cancelled, the call goes on
    /// to be recorded, but its progress is for no one.
    waits: Arc<AtomicBool>,
    /// The last progress relayed: notifications are handled concurrently, and progress
    /// must only increase, so one that arrives after a later one is dropped rather than
    /// relayed out of order. Kept with the call, and gone with it.
    last: Arc<tokio::sync::Mutex<f64>>,
}

/// The proxy's client side: it relays the upstream's notifications to the agent.
#[derive(Clone)]
pub struct Relay {
    downstream: Downstream,
    names: ProgressNames,
}

impl ClientHandler for Relay {
    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Under the agent's own token, or not at all: rmcp's token is one the agent
        // never gave, and may be one it uses for another call.
        let named = self
            .names
            .lock()
            .ok()
            .and_then(|names| names.get(&params.progress_token).cloned());
        let Some(ProgressName {
            agents: Some(agents),
            relaying,
            waits,
            last,
        }) = named
        else {
            return;
        };
        if !waits.load(Ordering::SeqCst) {
            return;
        }
        let _relaying = relaying.read().await;
        // The call may have been answered meanwhile: then it is too late.
        let still_named = self
            .names
            .lock()
            .is_ok_and(|names| names.contains_key(&params.progress_token));
        if !still_named {
            return;
        }
        params.progress_token = agents;
        // The check and the send under one lock: two relays racing could otherwise
        // both pass the check and reach the agent in the other order.
        let mut last = last.lock().await;
        if params.progress > *last {
            *last = params.progress;
            if let Some(agent) = self.downstream.get() {
                let _ = agent.notify_progress(params).await;
            }
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(agent) = self.downstream.get() {
            let _ = agent.notify_logging_message(params).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(agent) = self.downstream.get() {
            let _ = agent.notify_resource_updated(params).await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(agent) = self.downstream.get() {
            let _ = agent.notify_tool_list_changed().await;
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(agent) = self.downstream.get() {
            let _ = agent.notify_resource_list_changed().await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(agent) = self.downstream.get() {
            let _ = agent.notify_prompt_list_changed().await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("send-once-proxy", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The upstream server, connected.
pub struct Upstream {
    service: RunningService<RoleClient, Relay>,
    /// Held while connected. It is not killed when dropped: it ends when its input
    /// closes, and what is left of its process group when the proxy ends ([`Group`]).
    _process: tokio::process::Child,
    /// What it said of itself at `initialize`.
    pub info: ServerPeerInfo,
    /// Its tools, as it listed them at start.
    pub tools: Vec<Tool>,
}

/// An upstream process just started.
pub struct Started {
    /// The process.
    pub process: tokio::process::Child,
    /// Its standard input.
    pub input: tokio::process::ChildStdin,
    /// Its standard output.
    pub output: tokio::process::ChildStdout,
    /// Its standard error: the proxy says what it writes (`cli::mcp::notes`), since
    /// passed through as it is, it could reach a terminal raw, or cut an answer's line
    /// where the proxy's stderr is the agent's own pipe.
    pub errors: std::io::PipeReader,
    /// Its process group, stopped when this is dropped.
    pub group: Option<Group>,
    /// The program, as the command line named it.
    pub program: String,
}

/// The upstream's process group (it leads a session of its own): dropped, whatever is
/// left of it is killed, the upstream and what it started (`npx` starts `node`, a
/// shell its commands). Held until the proxy ends, so that the upstream first sees its
/// input close and may end by itself, saying what it says then: the first step of
/// MCP's stdio shutdown (the proxy kills at once what is left after its second, where
/// MCP would send SIGTERM and wait again). Its session is noted (`procs::notes`): after
/// a kill -9 of the proxy, which drops nothing, a call it claimed counts as running
/// while anything of the upstream runs, since that may still make it (hostile round,
/// session 43: AI1, the orphaned upstream made the call after a person marked it
/// failed and the agent's retry made it again).
pub struct Group {
    id: i32,
    _noted: crate::procs::notes::SessionNote,
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: killpg with a process group this process made for its child; one
        // already gone answers ESRCH, which changes nothing.
        unsafe { libc::killpg(self.id, libc::SIGKILL) };
    }
}

/// What became of a call forwarded upstream.
#[derive(Debug)]
pub enum Forwarded {
    /// A final result (`isError` false).
    Done(CallToolResult),
    /// A final result with `isError` true: the tool says it failed, but it may have
    /// acted before it did.
    ToolError(CallToolResult),
    /// A JSON-RPC error that means the tool never ran: no such tool, invalid
    /// arguments.
    NotRun(ErrorData),
    /// No final answer: the upstream died, the transport closed, the limit passed, an
    /// answer that is not final (input required, a task), or another JSON-RPC error.
    /// Whether the tool acted is not known.
    Lost(String),
    /// No answer within the proxy's limit. Whether the tool acted is not known: it may
    /// still act, and answer.
    TimedOut,
    /// The upstream had already exited: the call was never sent.
    Gone,
}

/// Why a call that outlived `limit` (the whole limit, as the policy or `--timeout`
/// gives it) has no outcome yet; `listens` when the proxy keeps listening for its
/// answer (a `once` call through the lane), else the answer is dropped.
pub fn not_in_time(limit: Duration, listens: bool) -> String {
    format!(
        "the upstream did not answer within the proxy's limit of {}; the call may still be under way there, and {}",
        crate::provider::Limit::new(limit).written,
        if listens {
            "if the upstream answers while the proxy runs, the ledger records what it says"
        } else {
            "an answer that comes later is not recorded"
        }
    )
}

impl Upstream {
    /// Starts `command` (program and arguments), its standard input, output and error
    /// piped to the proxy: the process, and what to write to it and read from it.
    pub fn spawn(command: &[String]) -> Result<Started, String> {
        let (program, args) = command
            .split_first()
            .ok_or("no upstream command was given after --")?;
        // A pipe of our own rather than tokio's: its reader is read by a thread with
        // blocking reads (see `errors`).
        let (errors, errors_in) = std::io::pipe()
            .map_err(|e| format!("cannot start the upstream {}: {e}", shown(program)))?;
        let mut child = tokio::process::Command::new(program);
        // A session, and so a process group, of its own: a Ctrl-C or a signal to the
        // agent's whole group reaches the proxy, which lets calls in flight finish, and
        // not the upstream, which the proxy stops after them; and what it starts stays
        // in the session, which the note names.
        child
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(errors_in);
        crate::command::in_a_session_of_its_own(&mut child, false);
        // Noted before it starts: an upstream a kill -9 of the proxy would leave
        // unseen is not started.
        let starting = crate::procs::notes::note_starting()
            .map_err(|e| format!("cannot start the upstream {}: {e}", shown(program)))?;
        let mut process = child
            .spawn()
            .map_err(|e| format!("cannot start the upstream {}: {e}", shown(program)))?;
        // The command holds the pipe's writing end until it is dropped: the reader
        // sees the end only once the upstream's copy is the last.
        drop(child);
        let (Some(input), Some(output)) = (process.stdin.take(), process.stdout.take()) else {
            return Err(format!(
                "cannot start the upstream {}: its pipes were not made",
                shown(program)
            ));
        };
        let group = process.id().map(|id| Group {
            id: id as i32,
            _noted: starting.started(id),
        });
        Ok(Started {
            group,
            process,
            input,
            output,
            errors,
            program: program.clone(),
        })
    }

    /// Connects to the upstream `process` through `pipe` (its pipes, beneath the
    /// proxy's lane); `downstream` is where its notifications go once the agent is
    /// connected.
    pub async fn connect(
        process: tokio::process::Child,
        program: &str,
        pipe: tokio::io::DuplexStream,
        downstream: Downstream,
    ) -> Result<Upstream, String> {
        let relay = Relay {
            downstream,
            names: Arc::default(),
        };
        let service = relay.serve(tokio::io::split(pipe)).await.map_err(|e| {
            format!(
                "the upstream {} did not start an MCP session: {e}",
                shown(program)
            )
        })?;
        let info = service
            .peer_info()
            .map(|info| (*info).clone())
            .ok_or("the upstream gave no initialize result")?;
        let tools = if info.capabilities.tools.is_some() {
            service
                .list_all_tools()
                .await
                .map_err(|e| format!("the upstream's tools/list failed: {e}"))?
        } else {
            Vec::new()
        };
        Ok(Upstream {
            service,
            _process: process,
            info,
            tools,
        })
    }

    /// The connection, for the requests relayed as they are (lists, reads).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Forwards one call, waiting up to `limit`; `meta` is the agent's request meta
    /// (its progress token), passed up so progress comes back to it.
    pub async fn call(
        &self,
        params: CallToolRequestParams,
        meta: Option<RequestMetaObject>,
        limit: Duration,
    ) -> Forwarded {
        // Awaited by the agent's own request: dropped with it if the agent cancels.
        let waits = Arc::new(AtomicBool::new(true));
        self.caller().call(params, meta, waits, limit).await
    }

    /// What forwards calls through rmcp's client, for a task of its own.
    pub fn caller(&self) -> Caller {
        Caller {
            peer: self.service.peer().clone(),
            names: Arc::clone(&self.service.service().names),
        }
    }

    /// Ends the session and the upstream process.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// Forwards calls through rmcp's client, relaying their progress under the agent's
/// tokens.
#[derive(Clone)]
pub struct Caller {
    peer: Peer<RoleClient>,
    names: ProgressNames,
}

impl Caller {
    /// [`Upstream::call`]; `waits` says whether the agent still waits for the call, for
    /// its progress.
    pub async fn call(
        &self,
        mut params: CallToolRequestParams,
        meta: Option<RequestMetaObject>,
        waits: Arc<AtomicBool>,
        limit: Duration,
    ) -> Forwarded {
        // An upstream that has exited cannot have been reached: nothing was sent.
        if self.peer.is_transport_closed() {
            return Forwarded::Gone;
        }
        let agents = meta
            .as_ref()
            .and_then(RequestMetaObject::get_progress_token);
        params.meta = meta.clone();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut options = PeerRequestOptions::with_timeout(limit);
        if let Some(meta) = meta {
            options = options.with_meta(meta);
        }
        let handle = match self.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            // Not handed to the transport: the upstream never saw it.
            Err(_) => return Forwarded::Gone,
        };
        let name = ProgressName {
            agents,
            relaying: Arc::default(),
            waits,
            last: Arc::new(tokio::sync::Mutex::new(f64::MIN)),
        };
        let named = Named::new(&self.names, handle.progress_token.clone(), name);
        let answer = handle.await_response().await;
        named.answered().await;
        sorted(answer)
    }
}

/// rmcp's progress token for a call named with the agent's, until the call ends
/// (or the wait for it is dropped).
struct Named {
    names: ProgressNames,
    token: ProgressToken,
    relaying: Arc<tokio::sync::RwLock<()>>,
}

impl Named {
    fn new(names: &ProgressNames, token: ProgressToken, name: ProgressName) -> Named {
        let relaying = Arc::clone(&name.relaying);
        if let Ok(mut named) = names.lock() {
            named.insert(token.clone(), name);
        }
        Named {
            names: Arc::clone(names),
            token,
            relaying,
        }
    }

    /// Lets the name go once the progress being relayed has been sent, before the
    /// call's answer is.
    async fn answered(self) {
        let relaying = Arc::clone(&self.relaying);
        let _relayed = relaying.write().await;
        drop(self);
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        if let Ok(mut named) = self.names.lock() {
            named.remove(&self.token);
        }
    }
}

/// What the upstream's `answer` to a forwarded call says of it.
pub fn sorted(answer: Result<ServerResult, ServiceError>) -> Forwarded {
    match answer {
        Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
            Forwarded::ToolError(result)
        }
        Ok(ServerResult::CallToolResult(result)) => Forwarded::Done(result),
        Ok(ServerResult::InputRequiredResult(_)) => Forwarded::Lost(
            "the upstream asked for more input (input_required), which the proxy does not relay yet; the call is not final".to_owned(),
        ),
        Ok(ServerResult::CreateTaskResult(_)) => Forwarded::Lost(
            "the upstream answered with a task, which the proxy does not follow yet; the call is not final".to_owned(),
        ),
        Ok(_) => Forwarded::Lost("the upstream answered tools/call with something else than a result".to_owned()),
        Err(ServiceError::McpError(error)) if never_ran(&error) => Forwarded::NotRun(error),
        Err(ServiceError::McpError(error)) => Forwarded::Lost(format!(
            "the upstream answered with error {} ({}), which does not say whether the tool acted",
            error.code.0,
            crate::text::visible_inline(&error.message)
        )),
        Err(ServiceError::Timeout { .. }) => Forwarded::TimedOut,
        Err(ServiceError::TransportClosed) => {
            Forwarded::Lost("the upstream's connection closed (it may have died)".to_owned())
        }
        Err(e) => Forwarded::Lost(format!("the call did not complete: {e}")),
    }
}

/// An error that says the call was refused before the tool ran: the method or the
/// tool does not exist, or the arguments do not fit it.
fn never_ran(error: &ErrorData) -> bool {
    error.code == ErrorCode::METHOD_NOT_FOUND || error.code == ErrorCode::INVALID_PARAMS
}

fn shown(program: &str) -> String {
    crate::text::visible_inline(program).into_owned()
}
