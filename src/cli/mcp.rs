//! `send-once mcp`: the review queue as an MCP server over stdio, for agents that
//! propose sends (send_once::mcp::agent); and `send-once mcp proxy`: the ledger in
//! front of any MCP server (send_once::mcp::proxy).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use rmcp::ServiceExt;
use send_once::LedgerLocation;
use send_once::ledger::{Access, Ledger};
use send_once::mcp::agent::{AgentServer, SendCommands};
use send_once::mcp::door::Door;
use send_once::mcp::in_flight::InFlight;
use send_once::mcp::left::{How, LeftOpen, Unsettled, settle_left};
use send_once::mcp::policy::{Mode, Policy};
use send_once::mcp::proxy::lane::Lane;
use send_once::mcp::proxy::upstream::{Downstream, Upstream};
use send_once::mcp::proxy::{ProxyConfig, ProxyServer, STATUS_TOOL, check_status_tool};
use send_once::open::Open;
use send_once::review::Review;
use send_once::text::visible_inline;
use std::future::Future;

use super::ledger_arg::{clock, ledger_over, ledger_to_create, parse_limit};
use super::{Exit, fail};

mod notes;
use notes::{Notes, Relayed};

/// How long the proxy gives its upstream, once its input is closed (or it failed to
/// start), to end by itself and finish what it writes to its standard error.
const UPSTREAM_LAST_WORDS: Duration = Duration::from_secs(1);

/// The end of an upstream: what it writes to its standard error, and its process group.
struct Ending {
    relayed: Relayed,
    _group: Option<send_once::mcp::proxy::upstream::Group>,
}

impl Ending {
    /// Waits up to [`UPSTREAM_LAST_WORDS`] for the upstream's standard error to end
    /// (it ends with the upstream, and whatever it started), then kills what is left.
    fn end(self) {
        self.relayed.ended_within(UPSTREAM_LAST_WORDS);
    }
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// The ledger, SQLite or Postgres: it keeps the review queue (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Who submits the drafts (default: the name the MCP client gives when it connects)
    #[arg(long)]
    pub by: Option<String>,
    /// CHANNEL=CMD: offer dispatch_draft, sending an approved draft of CHANNEL through CMD (split as a shell would; repeatable; also the config file's [send] table)
    #[arg(long, value_name = "CHANNEL=CMD")]
    pub send: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Put the ledger in front of an MCP server: each tool call passes, is made at most once, or waits for a person, as the policy says.
    Proxy(ProxyArgs),
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once mcp proxy [LEDGER] --policy FILE [OPTIONS] -- CMD [ARGS]...")]
pub struct ProxyArgs {
    /// The ledger the calls are claimed in (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory); holding calls needs SQLite or Postgres
    pub ledger: Option<LedgerLocation>,
    /// The policy: the upstream's name, and per tool pass, once or hold (TOML; see docs/mcp.md)
    #[arg(long, required = true)]
    pub policy: PathBuf,
    /// How long a call may take upstream when its rule sets no timeout; past it, the call is unknown
    #[arg(long, default_value = "5m", allow_hyphen_values = true)]
    pub timeout: String,
    /// How long the upstream has to start its MCP session (answer initialize and list its tools); `npx` fetching a package on first use may need longer
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    pub start_timeout: String,
    /// The name of the proxy's own tool that reports held calls
    #[arg(long, default_value = STATUS_TOOL)]
    pub status_tool: String,
    /// Let a tool the policy does not name pass when the upstream marks it read-only (readOnlyHint); the upstream's hints are not trusted otherwise
    #[arg(long)]
    pub trust_annotations: bool,
    /// Who submits held calls (default: the name the MCP client gives when it connects)
    #[arg(long)]
    pub by: Option<String>,
    /// The upstream MCP server's command line, after --
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub fn mcp(args: &McpArgs) -> Exit {
    if let Some(McpCommand::Proxy(proxy)) = &args.command {
        return self::proxy(proxy);
    }
    if let Err(message) = check_by(args.by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    let location = match queue_ledger(args.ledger.as_ref(), "send-once mcp") {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    // Checked before the ledger is opened: a refusal at start creates nothing.
    let send = match send_commands(&args.send) {
        Ok(send) => send,
        Err(message) => return fail(Exit::Refused, message),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    // An agent's first draft creates the ledger, as `draft submit` does.
    let store = match location.open_queue(Access::Create) {
        Ok(store) => store,
        Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
    };
    let server = AgentServer::new(
        Review::new(store.clone(), clock()),
        ledger_over(store),
        args.by.clone(),
        send,
    );
    // What a stop leaves open is recorded through the server's own ledger.
    let ledger = server.ledger();
    let in_flight = server.in_flight();
    let stop_waiting = server.stopper();
    let dispatching = server.dispatching();
    let unsettled = server.unsettled();
    let notes = Notes::new();
    // One bound from the agent's leaving to the end: the door's wait for the answers
    // it is owed counts against the wait for dispatches in flight.
    let bound = Duration::from_secs(60);
    let exit = runtime.block_on(async {
        let (agent_in, agent_out, _blocking_again) = send_once::mcp::stdio::transport();
        let (door, server_end) = Door::start(agent_in, agent_out, Arc::clone(&in_flight), bound);
        let exit = serve_until_stopped(
            server,
            tokio::io::split(server_end),
            in_flight,
            std::future::pending(),
            {
                let door = Arc::clone(&door);
                move || door.left_of(bound)
            },
            {
                // The door reads no more requests and lets those already read be
                // answered (a long poll at once), then ends the session.
                let door = Arc::clone(&door);
                let (dispatching, notes) = (Arc::clone(&dispatching), Arc::clone(&notes));
                move || {
                    stop_waiting();
                    door.stop();
                    let running = dispatching.running();
                    if !running.is_empty() {
                        notes.say(waiting_for(&running, bound));
                    }
                }
            },
            Arc::clone(&notes),
        )
        .await;
        let mut left_unknown = false;
        if !exit.settled || unsettled.holds_made() {
            dispatching.stop().await;
            let left = said_left(&ledger, &unsettled, STOPPED_DISPATCH, &location.as_argument(), &notes).await;
            left_unknown = !left.is_empty();
        }
        // What is still on its way to the agent is written before the process ends.
        door.flushed(exit.flush_bound()).await;
        let written = door.agent_output_written();
        notes.said(written);
        match door.agent_write_error() {
            Some(why) => fail(
                Exit::Refused,
                format!(
                    "the server's answers could not be written to its output ({why}), so the agent did not get them; what the ledger records still holds"
                ),
            ),
            // A send left for a person to settle is not a clean end either.
            None if left_unknown => Exit::Unknown,
            None => exit.exit(written),
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    exit
}

/// What the server says at its stop of the dispatches it waits for (`drafts`), up to
/// `bound`.
fn waiting_for(drafts: &[i64], bound: Duration) -> String {
    let named: Vec<String> = drafts.iter().map(|id| format!("draft {id}")).collect();
    format!(
        "waiting up to {}s for the send{} of {} to end; a second signal stops {} and records {} as unknown, for a person to settle",
        bound.as_secs(),
        if drafts.len() == 1 { "" } else { "s" },
        named.join(", "),
        if drafts.len() == 1 { "it" } else { "them" },
        if drafts.len() == 1 { "it" } else { "them" },
    )
}

/// What a dispatch's claim says when the server stopped it.
const STOPPED_DISPATCH: &str = "send-once mcp stopped before the send command ended: the command was stopped with its process group, and may or may not have reached the provider";

/// The send commands `dispatch_draft` may run: the config file's `[send]` table, then
/// each `--send CHANNEL=CMD` over it.
fn send_commands(flags: &[String]) -> Result<SendCommands, String> {
    let mut commands = match send_once::config::config_path() {
        Some(path) => send_once::config::send_commands(&path)?,
        None => Default::default(),
    };
    let mut given = std::collections::BTreeSet::new();
    for flag in flags {
        let Some((channel, command)) = flag.split_once('=') else {
            return Err(format!(
                "--send {} is not CHANNEL=CMD (say email='mailer --send')",
                visible_inline(flag)
            ));
        };
        if channel.trim().is_empty() {
            return Err(format!("--send {} names no channel", visible_inline(flag)));
        }
        let argv = send_once::provider::split_command("--send", command)?;
        let channel = send_once::review::quorum::normalise_channel(channel);
        // The config file's command is the one a flag replaces; two flags for one
        // channel are a mistake, and which was meant cannot be told.
        if !given.insert(channel.clone()) {
            return Err(format!(
                "--send names channel {} twice: give one command for each channel",
                visible_inline(&channel)
            ));
        }
        commands.insert(channel, argv);
    }
    Ok(SendCommands(commands))
}

fn check_by(by: Option<&str>) -> Result<(), String> {
    match by {
        Some(by) if by.trim().is_empty() => Err(format!(
            "--by {by:?} names nobody: give the agent's name, or leave it out to use the name its MCP client gives"
        )),
        _ => Ok(()),
    }
}

/// The ledger, refused when it is JSON Lines: it keeps no review queue.
fn queue_ledger(given: Option<&LedgerLocation>, what: &str) -> Result<LedgerLocation, String> {
    let location = ledger_to_create(given)?;
    if let LedgerLocation::Jsonl(path) = &location {
        return Err(format!(
            "{what} needs a ledger that keeps a review queue (an SQLite file or Postgres): {} is JSON Lines, which keeps none",
            visible_inline(&path.display().to_string())
        ));
    }
    Ok(location)
}

fn proxy(args: &ProxyArgs) -> Exit {
    if let Err(message) = check_by(args.by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    // MCP's tool names: 1 to 128 of A-Z, a-z, 0-9, _, - and .
    let name = &args.status_tool;
    if name.is_empty()
        || name.len() > 128
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return fail(
            Exit::Refused,
            format!(
                "--status-tool {} is not a tool name (1 to 128 letters, digits, _, - or .)",
                visible_inline(&format!("{name:?}"))
            ),
        );
    }
    let policy = match Policy::load(&args.policy) {
        Ok(policy) => policy,
        Err(message) => return fail(Exit::Refused, message),
    };
    if policy.tools.contains_key(name) {
        return fail(
            Exit::Refused,
            format!(
                "the policy has a rule for {}, the proxy's own status tool, which never applies; remove it or rename the tool with --status-tool",
                visible_inline(name)
            ),
        );
    }
    let timeout = match parse_limit(&args.timeout, "--timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let start_timeout = match parse_limit(&args.start_timeout, "--start-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let holds = policy.default == Mode::Hold || policy.tools.values().any(|r| r.mode == Mode::Hold);
    let location = if holds {
        queue_ledger(args.ledger.as_ref(), "a policy that holds calls")
    } else {
        ledger_to_create(args.ledger.as_ref())
    };
    let location = match location {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    // Made before the upstream starts, so that what it says on standard error while
    // it starts (often why it cannot) is said too.
    let notes = Notes::new();
    // The upstream first: one that does not start, or has a tool of the status tool's
    // name, is refused before the ledger is created.
    let started = match runtime.block_on(start_upstream(
        &args.command,
        &args.status_tool,
        start_timeout,
        (&policy.upstream, &notes),
    )) {
        Ok(started) => started,
        Err((message, ending)) => {
            // What the upstream said about why it did not start comes first.
            if let Some(ending) = ending {
                ending.end();
            }
            notes.said(true);
            return fail(Exit::Refused, message);
        }
    };
    let opened = match location.open(Access::Create) {
        Ok(opened) => opened,
        Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
    };
    let config = ProxyConfig {
        policy,
        ledger: Arc::new(ledger_over(opened.store)),
        review: opened
            .queue
            .map(|queue| Arc::new(Review::new(queue, clock()))),
        ledger_name: location.inline(),
        timeout,
        status_tool: args.status_tool.clone(),
        trust_annotations: args.trust_annotations,
        by: args.by.clone(),
    };
    let (started, ending) = started;
    let exit = runtime.block_on(serve_proxy(config, started, timeout, notes));
    // Stopped by a signal or by the upstream's exit, the thread reading stdin is still
    // blocked there: the runtime does not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    // The runtime's tasks held the upstream's input: closed with them, it may end.
    ending.end();
    exit
}

/// The upstream, started and connected, and the lane between it and the agent.
struct Started {
    upstream: Upstream,
    downstream: Downstream,
    lane: Arc<Lane>,
    server_end: tokio::io::DuplexStream,
    _blocking_again: send_once::mcp::stdio::BlockingAgain,
}

async fn start_upstream(
    command: &[String],
    status_tool: &str,
    within: Duration,
    (upstream_name, notes): (&str, &Arc<Notes>),
) -> Result<(Started, Ending), (String, Option<Ending>)> {
    let downstream = Downstream::default();
    let started = Upstream::spawn(command).map_err(|message| (message, None))?;
    let ending = Ending {
        relayed: notes.relay_upstream(upstream_name, started.errors),
        _group: started.group,
    };
    let (agent_in, agent_out, blocking_again) = send_once::mcp::stdio::transport();
    let (lane, ends) = Lane::start(agent_in, agent_out, started.input, started.output);
    let connected = async {
        // An upstream that never answers `initialize` would hold the proxy forever.
        let upstream = tokio::time::timeout(
            within,
            Upstream::connect(
                started.process,
                &started.program,
                ends.client,
                downstream.clone(),
            ),
        )
        .await
        .map_err(|_| {
            format!(
                "the upstream {} did not start an MCP session within {} (give it longer with --start-timeout)",
                visible_inline(&started.program),
                send_once::provider::Limit::new(within).written
            )
        })??;
        check_status_tool(&upstream, status_tool)?;
        Ok(upstream)
    };
    // Refused, the upstream is stopped here (its process is dropped with the attempt).
    match connected.await {
        Ok(upstream) => Ok((
            Started {
                upstream,
                downstream,
                lane,
                server_end: ends.server,
                _blocking_again: blocking_again,
            },
            ending,
        )),
        Err(message) => Err((message, Some(ending))),
    }
}

async fn serve_proxy(
    config: ProxyConfig,
    started: Started,
    timeout: Duration,
    notes: Arc<Notes>,
) -> Exit {
    let Started {
        upstream,
        downstream,
        lane,
        server_end,
        _blocking_again,
    } = started;
    let (ledger, ledger_name) = (Arc::clone(&config.ledger), config.ledger_name.clone());
    let server = ProxyServer::new(config, upstream, downstream);
    let unsettled = server.unsettled();
    let in_flight = server.in_flight();
    let bound = timeout.min(Duration::from_secs(60));
    lane.open(
        server.routes(),
        server.gate(),
        Arc::clone(&in_flight),
        bound,
    );
    let keep_upstream = server.upstream();
    let upstream = std::sync::Arc::clone(&keep_upstream);
    let gone = async move {
        while !upstream.peer().is_transport_closed() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        "the upstream server exited"
    };
    let exit = serve_until_stopped(
        server,
        tokio::io::split(server_end),
        in_flight,
        gone,
        {
            // One bound from the agent's leaving to the end: the lane's wait for the
            // answers it is owed counts against the wait for calls in flight.
            let lane = Arc::clone(&lane);
            move || lane.left_of(bound)
        },
        {
            // The lane reads no more calls, lets those already read be answered
            // (within the bound), then ends the session.
            let lane = Arc::clone(&lane);
            move || lane.stop()
        },
        Arc::clone(&notes),
    )
    .await;
    // What is still on its way to the agent is written before the process ends, and a
    // call still unanswered is told so.
    lane.flushed(
        exit.flush_bound(),
        "the proxy stopped before the upstream answered, so whether the call happened is not known",
    )
    .await;
    let written = lane.agent_output_written();
    notes.said(written);
    // What the upstream has not answered it will not now: it ends with the proxy.
    let left = said_left(&ledger, &unsettled, STOPPED_CALL, &ledger_name, &notes).await;
    // Only now, the calls in flight answered, is the upstream's session ended; the
    // upstream itself ends once its input closes with the runtime (see `Ending`).
    drop(keep_upstream);
    if let Some(why) = lane.agent_write_error() {
        return fail(
            Exit::Refused,
            format!(
                "the proxy's answers could not be written to its output ({why}), so the agent did not get them; what the ledger records still holds"
            ),
        );
    }
    if !left.is_empty() {
        // Sends left for a person to settle: not a clean end.
        return Exit::Unknown;
    }
    exit.exit(written)
}

/// What a `once` call's claim says when the proxy stopped before the upstream answered.
const STOPPED_CALL: &str = "the proxy stopped before the upstream answered, and the upstream with it: the call may or may not have been made";

/// Records what this server leaves open as stopped (`why`), says each send it leaves
/// unknown with the commands that settle it in the ledger named `ledger_name`, and
/// gives them.
async fn said_left(
    ledger: &Ledger,
    unsettled: &Unsettled,
    why: &str,
    ledger_name: &str,
    notes: &Notes,
) -> Vec<LeftOpen> {
    let left = match settle_left(ledger, unsettled, why).await {
        Ok(left) => left,
        Err(e) => {
            notes.say(format!(
                "the sends this server leaves open could not be read ({e}): send-once audit lists them"
            ));
            Vec::new()
        }
    };
    for open in &left {
        notes.say(left_open(open, ledger_name));
    }
    left
}

/// What a server says at its end of a send it leaves unknown, with the commands that
/// settle it in the ledger named `ledger`.
fn left_open(open: &LeftOpen, ledger: &str) -> String {
    let call = open
        .call
        .as_deref()
        .map(|call| format!("the send {} ", visible_inline(call)))
        .unwrap_or_else(|| "a send ".to_owned());
    let key = visible_inline(&open.key);
    let how = match &open.how {
        How::Stopped => "had not ended when the server stopped it, and is recorded as unknown",
        How::NotRecorded => {
            "had not ended when the server stopped it, and could not be recorded as unknown: it reads as sending until its limit, then as unknown (until then, failed takes --even-if-running)"
        }
        How::Unknown { listened: true } => {
            "went past its limit and is unknown; the proxy no longer listens for its late answer"
        }
        How::Unknown { listened: false } => "is unknown, and nobody has settled it yet",
        How::MadeUnrecorded { provider_id, late } => {
            // The upstream's answer is the only record of it: the person records it.
            let id = provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", visible_inline(id)))
                .unwrap_or_default();
            return format!(
                "{call}(key {key}) {}{id}, but the ledger could not record that. Record it sent:\n  send-once resolve {} {} sent --expect pending --expect-attempt {}",
                if *late {
                    "was answered by the upstream after its limit, so it was made"
                } else {
                    "went out: its send answered that it was made"
                },
                super::output::pasteable(ledger),
                super::output::pasteable(&open.key),
                open.attempt
            );
        }
    };
    format!(
        "{call}(key {key}) {how}. It is not made again on its own: check whether it happened, then record what happened:\n{}",
        super::output::settle_commands(ledger, &open.key, open.attempt, Some(&open.claimed_at), "")
    )
}

/// What the session says at a signal after the first (`why` names it).
fn stopping_again(why: &str) -> String {
    format!("{why} again: stopping without waiting for the calls in flight")
}

/// The next SIGINT or SIGTERM, named.
async fn stop_signal() -> &'static str {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        Some(()) = async { match term.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } } => "terminated",
    }
}

/// Serves `server` on stdio until the agent leaves, a SIGINT or SIGTERM comes, or
/// `gone` says why the server cannot go on; then lets the work in flight (forwarded
/// calls, dispatches) finish within `bound`. At the stop, `stopping` is called: the
/// transport (the door, or the proxy's lane) reads no more requests and ends the
/// session itself once those already read are answered, so that their answers reach
/// the agent. A second signal cancels the session, and waits for nothing more.
async fn serve_until_stopped<S: rmcp::Service<rmcp::RoleServer>, R, W>(
    server: S,
    transport: (R, W),
    in_flight: Arc<InFlight>,
    gone: impl Future<Output = &'static str> + Send + 'static,
    bound: impl Fn() -> Duration + Send + Sync + 'static,
    stopping: impl FnOnce() + Send + 'static,
    notes: Arc<Notes>,
) -> Served
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let service = match server.serve(transport).await {
        Ok(service) => service,
        Err(e) => {
            return Served {
                exit: fail(Exit::Refused, format!("the MCP session did not start: {e}")),
                hurried: false,
                settled: true,
            };
        }
    };
    let stop = service.cancellation_token();
    let said = Arc::clone(&notes);
    // Whether a second signal hurried the end.
    let watch = tokio::spawn(async move {
        let notes = said;
        let why = tokio::select! {
            why = stop_signal() => why,
            why = gone => why,
        };
        notes.say(format!("stopping: {why}"));
        stopping();
        // (This task is stopped when the session ends first.)
        let why = stop_signal().await;
        notes.say(stopping_again(why));
        stop.cancel();
        true
    });
    let ended = service.waiting().await;
    let hurried = if watch.is_finished() {
        watch.await.unwrap_or(false)
    } else {
        watch.abort();
        false
    };
    // Calls already forwarded finish (and are recorded) within the bound. A signal now
    // (a second one, or the first after the agent left) means: do not wait.
    let settled = if hurried {
        in_flight.count() == 0
    } else {
        tokio::select! {
            settled = in_flight.settled(bound()) => settled,
            why = stop_signal() => {
                notes.say(stopping_again(why));
                false
            }
        }
    };
    let exit = match ended {
        Ok(_) => Exit::Ok,
        Err(e) => fail(Exit::Refused, format!("the MCP session ended: {e}")),
    };
    Served {
        exit,
        hurried,
        settled,
    }
}

/// How a session served on stdio ended: its exit status, whether a second signal
/// hurried it (then what is left for the agent is not waited for), and whether the
/// work in flight all finished.
struct Served {
    exit: Exit,
    hurried: bool,
    settled: bool,
}

impl Served {
    /// How long to wait for what is still on its way to the agent.
    fn flush_bound(&self) -> Duration {
        if self.hurried {
            Duration::ZERO
        } else {
            Duration::from_secs(5)
        }
    }

    /// The exit status, now that `written` says whether everything meant for the
    /// agent reached its pipe: a session that ended with answers unwritten did not
    /// finish what it was asked, and says so by its status.
    fn exit(self, written: bool) -> Exit {
        match self.exit {
            Exit::Ok if !written => Exit::Refused,
            exit => exit,
        }
    }
}
