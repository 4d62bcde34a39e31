//! The fast lane: a `pass` call goes from the agent's pipe to the upstream's as the
//! line it is, with only its id changed, and its answer comes back the same way.
//!
//! A `once` call takes the lane too: it is handed to the proxy's gate ([`Gate`]) as
//! the parameters rmcp would have decoded, and the gate claims it and forwards those
//! parameters, encoded again, through the lane ([`Forward`]); its answer is written
//! to the agent by the lane.
//!
//! Everything else (the session's start, lists, reads, `hold` calls, the proxy's own
//! tool, notifications) goes through rmcp's server and client as before: the lane
//! sits on the pipes beneath them and hands each line either to rmcp or across.
//! Decoding a message into rmcp's types and encoding it again, on each side, cost a
//! `pass` call as much as the whole call straight to the upstream; the lane reads a
//! line's method and tool and nothing more, and rewrites only what must be
//! rewritten. The id must be: the proxy's rmcp client numbers its own requests on
//! the same pipe, and an agent's id could be one of those numbers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::oneshot;

use crate::mcp::asked::AskedOfRmcp;
use crate::mcp::closing::{Closing, Room};
use crate::mcp::in_flight::{InFlight, InFlightGuard};
use crate::mcp::outbox::Outbox;
use crate::mcp::wire::{
    BYTE_ORDER_MARK, LONGEST_FROM_RMCP, LONGEST_LINE, Read, Unreadable, answer_line, id_reused,
    read_line, refusal, request_id, unreadable_line, with_null_id,
};

mod gated;
mod ids;
mod lines;

use gated::Gated;
pub use gated::{Forward, Gate, GateAnswer, GatedCall, LateAnswer};
use lines::{Peek, asked, lane_number, spliced, spliced_two, task_handle_alone};

/// The ids the lane gives the calls it forwards: the prefix no rmcp client uses (its
/// ids are numbers), then a counter.
const OURS: &str = "send-once-pass-";

/// The progress tokens the lane gives the calls it forwards: a prefix, then the call's
/// number.
const OURS_PROGRESS: &str = "send-once-progress-";

/// How much a pipe beneath rmcp holds before its writer waits.
const PIPE: usize = 1 << 16;

/// How much may wait to be written to the agent or the upstream, with the lane's calls
/// still at the upstream, before the lane reads no more of the agent's calls: an agent
/// that does not read its answers is made to wait, while the answers to what it
/// already asked are still read and recorded.
const ROOM: usize = 8 << 20;

/// How many of the lane's calls may be at the upstream at once before the lane reads
/// no more of the agent's calls: a small call can have a large answer.
const MOST_AT_ONCE: usize = 64;

/// How the lane takes a tool's calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Route {
    /// Straight to the upstream, answered within the limit: a `pass` call.
    Pass(Duration),
    /// To the proxy's gate: a `once` call.
    Gated,
    /// Through rmcp's server, as every call before the session has started.
    Rmcp,
}

/// Which route each tool's calls take.
pub type Routes = Box<dyn Fn(&str) -> Route + Send + Sync>;

/// The lane between the agent's pipes, the upstream's, and rmcp's server and client.
pub struct Lane {
    to_agent: Arc<Outbox>,
    to_upstream: Arc<Outbox>,
    routes: OnceLock<Routes>,
    gate: OnceLock<Gate>,
    in_flight: OnceLock<Arc<InFlight>>,
    /// Set once the agent has said `notifications/initialized`: before that, every
    /// line goes to rmcp, which runs the session's start.
    started: AtomicBool,
    /// Set when the upstream's output has ended: a call is then answered at once.
    upstream_gone: AtomicBool,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiting>>,
    /// The calls handed to the gate and not yet answered, by their lane number.
    gated: Mutex<HashMap<u64, Gated>>,
    /// Requests handed to rmcp's server and not yet answered: they take room, and an
    /// agent that closes its side may still be reading, and gets their answers before
    /// the session ends.
    asked_of_rmcp: AskedOfRmcp,
    /// Told when a lane call or a request to rmcp is answered.
    answered: tokio::sync::Notify,
    /// How long an agent that has closed its side waits for the answers it is owed.
    drain: OnceLock<Duration>,
    /// When the agent closed its side.
    closing: Closing,
    /// Told when the session stops (a signal, the upstream's exit): the agent's
    /// calls are read no more.
    stopped: tokio::sync::Notify,
    /// The task writing rmcp's answers to the agent, until rmcp's server has stopped.
    from_server: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Where the answers to the gate's calls that outlived their limit go, should they
    /// come: the call may have been made after all, and the ledger is told so.
    late: Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>,
}

/// A call forwarded by the lane and not yet answered.
struct Waiting {
    /// Where its answer goes.
    to: Waiter,
    _timer: Timer,
    _in_flight: Option<InFlightGuard>,
    /// The call's length: its answer will take about as much room.
    size: usize,
    /// The agent's progress token for a `pass` call, as it wrote it: the call goes
    /// upstream with a token of the lane's ([`progress_token`]), and the lane relays
    /// its progress under the agent's.
    progress: Option<Box<[u8]>>,
}

/// Where the answer to a call the lane forwarded goes.
enum Waiter {
    /// Straight to the agent (a `pass` call).
    Agent {
        /// The agent's id.
        id: Value,
        /// The agent's id, as it wrote it.
        raw_id: Box<[u8]>,
    },
    /// To the gate's task, which records it first (a `once` call): the upstream's
    /// answer line, or why there is none; and, past the limit, the answer if it comes
    /// late ([`Lane::late`]).
    Gate {
        answer: oneshot::Sender<Result<Vec<u8>, NoAnswer>>,
        late: oneshot::Sender<Vec<u8>>,
    },
}

/// Why a call the lane forwarded for the gate has no answer.
pub enum NoAnswer {
    /// Its limit passed. It is left open at the upstream, which may answer still.
    TimedOut,
    /// The upstream's connection closed, or the proxy is stopping.
    Lost(String),
}

impl Waiter {
    /// The agent's id, as it wrote it and its value, if the answer goes straight to
    /// the agent.
    fn agent_id(&self) -> Option<(&[u8], &Value)> {
        match self {
            Waiter::Agent { id, raw_id } => Some((raw_id, id)),
            Waiter::Gate { .. } => None,
        }
    }
}

/// How a cancellation's id is matched to a call's. As written first, by value only
/// then: two numbers a double cannot tell apart (or `"a"` and `"\u0061"`) are not
/// taken for each other when the agent wrote them apart.
#[derive(Clone, Copy)]
enum Match {
    Written,
    Value,
}

/// Which of the calls `ids` (each with the agent's id, as written and its value) the
/// agent's id (`raw` as written, `id` its value) names, matched `how`.
fn named<'a>(
    mut ids: impl Iterator<Item = (u64, (&'a [u8], &'a Value))>,
    raw: &[u8],
    id: &Value,
    how: Match,
) -> Option<u64> {
    ids.find(|(_, (written, value))| match how {
        Match::Written => *written == raw,
        Match::Value => *value == id,
    })
    .map(|(number, _)| number)
}

/// The timer that gives up on a call the lane forwarded.
struct Timer(tokio::task::AbortHandle);

impl Drop for Timer {
    /// A call done with, however it ended, needs its timer no more. (The timer that
    /// gives up on it drops it last thing, when stopping itself no longer matters.)
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The ends rmcp is given: its server's toward the agent, its client's toward the
/// upstream.
pub struct Ends {
    /// For the proxy's rmcp server.
    pub server: DuplexStream,
    /// For the proxy's rmcp client.
    pub client: DuplexStream,
}

impl Lane {
    /// Starts the lane on the agent's `agent_in`/`agent_out` and the upstream's
    /// `upstream_in`/`upstream_out`, and gives back the lane and the ends for rmcp.
    /// Until [`Lane::open`] is called, every line goes through rmcp.
    pub fn start(
        agent_in: impl AsyncRead + Send + Unpin + 'static,
        agent_out: impl AsyncWrite + Send + 'static,
        upstream_in: impl AsyncWrite + Send + 'static,
        upstream_out: impl AsyncRead + Send + Unpin + 'static,
    ) -> (Arc<Lane>, Ends) {
        let to_agent = Outbox::new(agent_out);
        let to_upstream = Outbox::new(upstream_in);
        let lane = Arc::new(Lane {
            to_agent: Arc::clone(&to_agent),
            to_upstream: Arc::clone(&to_upstream),
            routes: OnceLock::new(),
            gate: OnceLock::new(),
            in_flight: OnceLock::new(),
            started: AtomicBool::new(false),
            upstream_gone: AtomicBool::new(false),
            next: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
            gated: Mutex::new(HashMap::new()),
            asked_of_rmcp: AskedOfRmcp::default(),
            answered: tokio::sync::Notify::new(),
            drain: OnceLock::new(),
            closing: Closing::default(),
            stopped: tokio::sync::Notify::new(),
            from_server: Mutex::new(None),
            late: Mutex::new(HashMap::new()),
        });
        let (server, server_side) = tokio::io::duplex(PIPE);
        let (client, client_side) = tokio::io::duplex(PIPE);
        let (server_out, server_in) = tokio::io::split(server_side);
        let (client_out, client_in) = tokio::io::split(client_side);
        let from_server = tokio::spawn(Arc::clone(&lane).from_server(server_out));
        if let Ok(mut slot) = lane.from_server.lock() {
            *slot = Some(from_server);
        }
        tokio::spawn(lines_to(client_out, to_upstream));
        tokio::spawn(Arc::clone(&lane).from_agent(agent_in, server_in));
        tokio::spawn(Arc::clone(&lane).from_upstream(upstream_out, client_in));
        (lane, Ends { server, client })
    }

    /// Waits, at most `bound`, until everything rmcp's server wrote (it has stopped)
    /// and every lane answer has reached the agent; a lane call still unanswered then
    /// is answered with `why`, so that no call is left without a word.
    pub async fn flushed(&self, bound: Duration, why: &str) {
        let from_server = self
            .from_server
            .lock()
            .ok()
            .and_then(|mut slot| slot.take());
        let deadline = tokio::time::Instant::now() + bound;
        let _ = tokio::time::timeout_at(deadline, async {
            if let Some(task) = from_server {
                let _ = task.await;
            }
        })
        .await;
        self.answer_all_waiting(why);
        self.answer_all_gated(why);
        let _ = tokio::time::timeout_at(deadline, self.to_agent.drained()).await;
    }

    /// Whether everything meant for the agent is written to its pipe.
    pub fn agent_output_written(&self) -> bool {
        self.to_agent.is_written()
    }

    /// Why the agent's answers could not be written, if it was not that the agent
    /// closed its end (a full disk under a file, an I/O error).
    pub fn agent_write_error(&self) -> Option<String> {
        self.to_agent.write_error()
    }

    /// Stops reading the agent's calls: the session is stopping. What was asked
    /// already is answered first (within the drain bound), then the session ends.
    pub fn stop(&self) {
        self.stopped.notify_one();
    }

    /// Lets `pass` and `once` calls take the lane, as `routes` says (`once` calls to
    /// `gate`), counting them in `in_flight` so that shutdown waits for them; an agent
    /// that closes its side gets what it is owed for up to `drain` before the session
    /// ends.
    pub fn open(&self, routes: Routes, gate: Gate, in_flight: Arc<InFlight>, drain: Duration) {
        let _ = self.routes.set(routes);
        let _ = self.gate.set(gate);
        let _ = self.in_flight.set(in_flight);
        let _ = self.drain.set(drain);
    }

    /// What is left of `bound` since the agent closed its side (all of it while the
    /// agent is there): the wait for its answers and for the calls in flight share it.
    pub fn left_of(&self, bound: Duration) -> Duration {
        self.closing.left_of(bound)
    }

    /// Waits until there is room for another call and its answer: see [`ROOM`] and
    /// [`MOST_AT_ONCE`]. Returns at once when the agent has gone, whose calls are
    /// read no more anyway.
    async fn room_for_more(&self) {
        // The usual case, before every line: no waiting to set up.
        if self.has_room() {
            return;
        }
        loop {
            // Taken before the look, they hear whatever changes after it.
            let answered = self.answered.notified();
            let to_agent = self.to_agent.progressed();
            let to_upstream = self.to_upstream.progressed();
            let in_flight = self.in_flight.get().map(|calls| calls.finished());
            if self.has_room() {
                return;
            }
            let ended = async {
                match in_flight {
                    Some(ended) => ended.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = answered => {}
                () = to_agent => {}
                () = to_upstream => {}
                () = ended => {}
            }
        }
    }

    /// [`Lane::room_for_more`], watching meanwhile for the agent's close.
    async fn room_or_end<R: AsyncRead + Unpin>(&self, reader: &mut BufReader<R>) -> Room {
        let drain = self.drain.get().copied();
        self.closing
            .room_or_end(reader, drain, || self.has_room(), || self.room_for_more())
            .await
    }

    fn has_room(&self) -> bool {
        // A gated call's forward is counted as the gated call it is, not twice.
        let (calls, owed) = self
            .waiting
            .lock()
            .map(|w| {
                w.values()
                    .filter(|call| matches!(call.to, Waiter::Agent { .. }))
                    .fold((0, 0), |(calls, owed), call| (calls + 1, owed + call.size))
            })
            .unwrap_or_default();
        let (gated, owed_gated) = self
            .gated
            .lock()
            .map(|g| (g.len(), g.values().map(|call| call.size).sum::<usize>()))
            .unwrap_or_default();
        // The server's calls in flight hold those rmcp's server forwarded, which stay
        // at the upstream when the agent cancels them, as the gate's do; they hold
        // the lane's and the gate's calls too, so the larger count is the bound.
        let in_flight = self.in_flight.get().map_or(0, |calls| calls.count());
        let (asked, owed_asked) = self.asked_of_rmcp.waiting();
        let calls = (calls + gated + asked).max(in_flight);
        let bytes =
            self.to_agent.waiting() + self.to_upstream.waiting() + owed + owed_gated + owed_asked;
        self.to_agent.has_failed() || (bytes < ROOM && calls < MOST_AT_ONCE)
    }

    /// Whether nothing the agent asked is unanswered.
    fn all_answered(&self) -> bool {
        self.asked_of_rmcp.waiting().0 == 0
            && self.waiting.lock().map(|w| w.is_empty()).unwrap_or(true)
            && self.gated.lock().map(|g| g.is_empty()).unwrap_or(true)
    }

    /// Waits until everything the agent asked is answered and the answers written,
    /// at most the drain bound.
    async fn answered_all(&self) {
        let Some(bound) = self.drain.get().copied() else {
            return;
        };
        // From when the agent closed its side, which may be before its last line was
        // taken.
        let _ = tokio::time::timeout(self.left_of(bound), async {
            loop {
                let answered = self.answered.notified();
                if self.all_answered() {
                    break;
                }
                answered.await;
            }
            self.to_agent.drained().await;
        })
        .await;
    }

    /// Writes rmcp's server's lines to the agent, counting its answers.
    async fn from_server(self: Arc<Self>, server_out: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(server_out);
        let mut line = Vec::new();
        loop {
            match read_line(&mut reader, &mut line, LONGEST_FROM_RMCP).await {
                Read::End => break,
                Read::TooLong => continue,
                Read::Line => {}
            }
            let peek = Peek::of(&line);
            // What only tells (progress, a log line) is dropped while the agent reads
            // nothing, rather than held without bound: the protocol lets a client miss
            // it, and no answer is lost.
            if peek
                .as_ref()
                .is_some_and(|p| p.id.is_none() && p.method.as_deref().is_some_and(only_tells))
                && self.to_agent.waiting() >= ROOM
            {
                continue;
            }
            let answered = peek
                .as_ref()
                .filter(|p| p.method.is_none())
                .and_then(|p| p.id);
            // rmcp leaves the id out of its answer to a request too broken to have one;
            // JSON-RPC 2.0 says it is null there, and a client may look for it.
            let without_id = peek
                .as_ref()
                .is_some_and(|p| p.method.is_none() && p.id.is_none() && p.error.is_some());
            let written = match without_id.then(|| with_null_id(&line)).flatten() {
                Some(line) => self.to_agent.push(line),
                None => self.to_agent.push_slice(&line),
            };
            // Counted out once its answer is on its way, and counts against the room
            // as that instead. An answer with no id is to a line the lane never
            // counted: the lane answers the requests rmcp could not read itself.
            if let Some(id) = answered
                && self.asked_of_rmcp.ended(id.get())
            {
                self.answered.notify_waiters();
            }
            if !written {
                break;
            }
        }
    }

    async fn from_agent(
        self: Arc<Self>,
        agent_in: impl AsyncRead + Unpin,
        mut server_in: impl AsyncWrite + Unpin,
    ) {
        let mut reader = BufReader::new(agent_in);
        let mut line = Vec::new();
        // No one reads the answers any more, or the session is stopping: no more
        // calls are taken.
        let gone = self.to_agent.failed();
        tokio::pin!(gone);
        let stopped = self.stopped.notified();
        tokio::pin!(stopped);
        let mut reading = true;
        loop {
            let read = tokio::select! {
                read = read_line(&mut reader, &mut line, LONGEST_LINE) => read,
                () = &mut gone => {
                    reading = false;
                    break;
                }
                () = &mut stopped => break,
            };
            match read {
                Read::End => break,
                Read::TooLong => {
                    self.refuse_unreadable(None, Unreadable::TooLong);
                    continue;
                }
                Read::Line => {}
            }
            // rmcp reads a line after a byte-order mark as the line without it: read
            // here so too, such a request counts against the room as any other.
            if line.starts_with(BYTE_ORDER_MARK) {
                line.drain(..BYTE_ORDER_MARK.len());
            }
            let peek = Peek::of(&line);
            // A cancellation takes no room and may free some: it is taken at once, even
            // while the room is full. Anything else waits for room.
            let cancels = peek.as_ref().is_some_and(|p| {
                p.id.is_none() && p.method.as_deref() == Some("notifications/cancelled")
            });
            if !cancels {
                let room = tokio::select! {
                    room = self.room_or_end(&mut reader) => room,
                    () = &mut gone => {
                        reading = false;
                        break;
                    }
                    () = &mut stopped => break,
                };
                if let Room::NotInTime = room {
                    break;
                }
            }
            let request = asked(&line, peek.as_ref());
            // rmcp drops without a word a line that is not JSON, or not UTF-8 where it
            // names the message.
            if peek.is_none()
                && request.is_none()
                && let Some(answer) = unreadable_line(&line)
            {
                self.to_agent.push(answer);
                continue;
            }
            if let Some(peek) = peek
                && self.take_from_agent(&line, peek).await
            {
                continue;
            }
            // rmcp would leave it unanswered, or answer it with no id or the wrong
            // error: the lane answers it instead. Under the id of a call the lane
            // still answers, rmcp's answer would be taken for that call's.
            if let Some(asked) = request {
                let id = &line[asked.id.clone()];
                let refused = if self.lane_waits(id) {
                    Err(id_reused(id, false))
                } else {
                    self.asked_of_rmcp.admit(&line, &asked)
                };
                if let Err(refused) = refused {
                    self.to_agent.push(refused);
                    continue;
                }
            }
            if server_in.write_all(&line).await.is_err() {
                break;
            }
        }
        // The agent has closed its side (and may still be reading), or the session is
        // stopping: what it asked is answered first. Then rmcp's server sees the end,
        // and the session ends.
        self.closing.closed();
        if reading {
            self.answered_all().await;
        }
        let _ = server_in.shutdown().await;
    }

    async fn from_upstream(
        self: Arc<Self>,
        upstream_out: impl AsyncRead + Unpin,
        mut client_in: impl AsyncWrite + Unpin,
    ) {
        let mut reader = BufReader::new(upstream_out);
        let mut line = Vec::new();
        let mut to_client = true;
        loop {
            match read_line(&mut reader, &mut line, LONGEST_LINE).await {
                Read::End => break,
                Read::TooLong => continue,
                Read::Line => {}
            }
            if self.take_from_upstream(&line) {
                continue;
            }
            // rmcp's client may have stopped reading (the session is ending): the
            // lane's own answers still come through.
            let line = task_handle_alone(&line).map_or(Cow::Borrowed(&line[..]), Cow::Owned);
            if to_client && client_in.write_all(&line).await.is_err() {
                to_client = false;
            }
        }
        self.upstream_gone.store(true, Ordering::SeqCst);
        self.answer_all_waiting("the upstream's connection closed (it may have died)");
        let _ = client_in.shutdown().await;
    }

    /// Whether the lane took this line from the agent (a `pass` call, or the
    /// cancellation of one).
    async fn take_from_agent(self: &Arc<Self>, line: &[u8], peek: Peek<'_>) -> bool {
        match peek.method.as_deref() {
            Some("notifications/initialized") => {
                // Handed to rmcp all the same; what follows may take the lane.
                self.started.store(true, Ordering::SeqCst);
                false
            }
            Some("tools/call") if self.started.load(Ordering::SeqCst) => {
                // Only a well-formed request takes the lane: rmcp answers the rest as
                // it always has, where an upstream might drop it unanswered.
                if peek.jsonrpc.as_deref() != Some("2.0")
                    || peek.result.is_some()
                    || peek.error.is_some()
                {
                    return false;
                }
                let Some((id, params)) = peek.id.zip(peek.params) else {
                    return false;
                };
                let progress = params.progress();
                let Some(name) = params.name else {
                    return false;
                };
                if !request_id(id) {
                    return false;
                }
                let route = self
                    .routes
                    .get()
                    .map_or(Route::Rmcp, |routes| routes(&name));
                if !matches!(route, Route::Rmcp)
                    && let Some(cancelled) = self.id_in_use(id.get().as_bytes())
                {
                    // Made under an id the agent waits on for another call, its answer
                    // would be taken for that one's (hostile round, session 43: AI4).
                    self.to_agent
                        .push(id_reused(id.get().as_bytes(), cancelled));
                    return true;
                }
                match route {
                    Route::Pass(limit) => self.forward(line, id, progress, limit),
                    Route::Gated => self.to_gate(line, id),
                    Route::Rmcp => false,
                }
            }
            // A notification: the same method with an id is a request, and not one to
            // cancel anything.
            Some("notifications/cancelled") if peek.id.is_none() => {
                let Some(raw) = peek.params.and_then(|p| p.request_id) else {
                    return false;
                };
                let Ok(theirs) = serde_json::from_str::<Value>(raw.get()) else {
                    return false;
                };
                let raw_text = raw.get();
                let raw = raw_text.as_bytes();
                // The agent expects no answer now (the protocol says so): the call is
                // forgotten here, and an answer that still comes is dropped. A gated
                // call goes on, to be recorded: the upstream is not told. The id as
                // written is looked for among all the calls before its value is.
                for how in [Match::Written, Match::Value] {
                    if self.forget_gated(raw, &theirs, how) {
                        return true;
                    }
                    if let Some(ours) = self.forget(raw, &theirs, how) {
                        if let Ok(mut message) = serde_json::from_slice::<Value>(line) {
                            message["params"]["requestId"] = Value::String(format!("{OURS}{ours}"));
                            send(&self.to_upstream, &message);
                        }
                        return true;
                    }
                }
                // rmcp's to stop, which sends no answer then: it is owed none.
                if self.asked_of_rmcp.cancelled(raw_text) {
                    self.answered.notify_waiters();
                }
                false
            }
            _ => false,
        }
    }

    /// Sends a `pass` call upstream under an id of the lane's, or answers it at once
    /// when the upstream has gone. False only if the line is not the call it seemed.
    fn forward(
        self: &Arc<Self>,
        line: &[u8],
        raw_id: &RawValue,
        progress: Option<&RawValue>,
        limit: Duration,
    ) -> bool {
        let Ok(id) = serde_json::from_str::<Value>(raw_id.get()) else {
            return false;
        };
        if self.upstream_gone.load(Ordering::SeqCst) {
            self.answer(
                raw_id.get().as_bytes(),
                "the upstream server has exited, so the call was not sent; the proxy must be restarted".to_owned(),
            );
            return true;
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let ours = progress_token(number);
        let ours = serde_json::to_vec(&ours).unwrap_or_default();
        let Some(message) = spliced_two(
            line,
            (raw_id, format!("\"{OURS}{number}\"").as_bytes()),
            progress.map(|token| (token, &ours[..])),
        ) else {
            return false;
        };
        let timer = self.timer(number, limit);
        let in_flight = self.in_flight.get().map(|f| f.start());
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(
                number,
                Waiting {
                    to: Waiter::Agent {
                        raw_id: raw_id.get().as_bytes().into(),
                        id,
                    },
                    _timer: timer,
                    _in_flight: in_flight,
                    size: message.len(),
                    progress: progress.map(|token| token.get().as_bytes().into()),
                },
            );
        }
        self.to_upstream.push(message);
        true
    }

    /// Gives up on the call `number` once `limit` has passed.
    fn timer(self: &Arc<Self>, number: u64, limit: Duration) -> Timer {
        let lane = Arc::downgrade(self);
        Timer(
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                if let Some(lane) = lane.upgrade() {
                    lane.gave_up(number, limit);
                }
            })
            .abort_handle(),
        )
    }

    /// The call `number` was not answered within `limit`: whoever waits is told. A
    /// `pass` call is cancelled at the upstream. A gate's call is not: a cancelled
    /// request is never answered (the protocol says so, and SDKs drop the answer),
    /// while a tool that does not stop for it (most do not, mid-request) acts all the
    /// same; left open, its answer, should it come, tells the ledger the call was made.
    fn gave_up(&self, number: u64, limit: Duration) {
        let Some(waiting) = self.take_waiting(number) else {
            return;
        };
        match waiting.to {
            Waiter::Gate { answer, late } => {
                if let Ok(mut waits_late) = self.late.lock() {
                    // Those no longer listened for are let go here.
                    waits_late.retain(|_, late| !late.is_closed());
                    waits_late.insert(number, late);
                }
                let _ = answer.send(Err(NoAnswer::TimedOut));
            }
            to => {
                let cancel = json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": format!("{OURS}{number}"), "reason": "the proxy's limit passed"},
                });
                send(&self.to_upstream, &cancel);
                self.lost(
                    to,
                    format!(
                        "the upstream did not answer within {}",
                        crate::provider::Limit::new(limit).written
                    ),
                );
            }
        }
    }

    /// Whether the lane took this line from the upstream: the answer to one of its
    /// calls, sent on to the agent under the agent's id.
    fn take_from_upstream(&self, line: &[u8]) -> bool {
        // Only an answer to the lane's call has an id of the lane's, a string: an rmcp
        // line is taken no further than this.
        let Some(peek) = Peek::of(line) else {
            return false;
        };
        if peek.method.as_deref() == Some("notifications/progress") {
            let token = peek.params.and_then(|p| p.progress_token);
            return token.is_some_and(|token| self.relay_progress(line, token));
        }
        if peek.method.is_some() {
            return false;
        }
        let Some(raw_id) = peek.id else {
            return false;
        };
        let Some(number) = lane_number(raw_id) else {
            return false;
        };
        let Some(waiting) = self.take_waiting(number) else {
            // Answered already (the limit passed): a gate's call is recorded yet, if
            // its gate still listens; another has no one to go to.
            let late = self.late.lock().ok().and_then(|mut l| l.remove(&number));
            if let Some(late) = late {
                let _ = late.send(line.to_vec());
            }
            return true;
        };
        match waiting.to {
            Waiter::Agent { raw_id: theirs, .. } => {
                if let Some(message) = spliced(line, raw_id, &theirs) {
                    self.to_agent.push(message);
                }
                self.answered.notify_waiters();
            }
            // The gate's task records the answer, then gives it to the agent.
            Waiter::Gate { answer, .. } => {
                let _ = answer.send(Ok(line.to_vec()));
                // Nothing is owed the agent for it now, if it cancelled its call.
                self.answered.notify_waiters();
            }
        }
        true
    }

    /// Relays the upstream's progress `line` for the lane's call whose token is
    /// `token`, in the order the upstream wrote it (before the call's answer); false if
    /// no call the agent still waits on has that token (rmcp's client then relays it
    /// for a call of its own, or drops it).
    fn relay_progress(&self, line: &[u8], token: &RawValue) -> bool {
        let Some(number) = progress_number(token) else {
            return false;
        };
        let theirs = self
            .waiting
            .lock()
            .ok()
            .and_then(|waiting| waiting.get(&number)?.progress.clone())
            .or_else(|| self.gated_progress(number));
        // A token of the lane's is taken here whatever comes of it: the call it was
        // for may have ended, and its progress is then for no one.
        if let Some(theirs) = theirs
            && self.to_agent.waiting() < ROOM
            && let Some(relayed) = spliced(line, token, &theirs)
        {
            // Dropped while the agent reads nothing, as rmcp's notifications are.
            self.to_agent.push(relayed);
        }
        true
    }

    /// Takes the call `number` off the waiting list.
    fn take_waiting(&self, number: u64) -> Option<Waiting> {
        self.waiting.lock().ok()?.remove(&number)
    }

    /// Answers every call still waiting with `why`.
    fn answer_all_waiting(&self, why: &str) {
        let left: Vec<Waiting> = match self.waiting.lock() {
            Ok(mut waiting) => waiting.drain().map(|(_, w)| w).collect(),
            Err(_) => Vec::new(),
        };
        for call in left {
            self.lost(call.to, why.to_owned());
        }
    }

    /// Tells whoever waits for a call's answer (`to`) that there is none, and why.
    fn lost(&self, to: Waiter, why: String) {
        match to {
            Waiter::Agent { raw_id, .. } => self.answer(&raw_id, why),
            Waiter::Gate { answer, .. } => {
                let _ = answer.send(Err(NoAnswer::Lost(why)));
            }
        }
    }

    /// Forgets the lane's call that the agent's request `id` is, and gives its number.
    fn forget(&self, raw: &[u8], id: &Value, how: Match) -> Option<u64> {
        let number = {
            let waiting = self.waiting.lock().ok()?;
            let ids = waiting
                .iter()
                .filter_map(|(number, w)| Some((*number, w.to.agent_id()?)));
            named(ids, raw, id, how)?
        };
        self.take_waiting(number);
        self.answered.notify_waiters();
        Some(number)
    }

    /// Answers the agent's call `raw_id` (its id as it wrote it) with an error result
    /// saying `why`: the call's fate is the proxy's to tell, as on rmcp's path.
    fn answer(&self, raw_id: &[u8], why: String) {
        // An error to the model, never success: it would report the call done. Without
        // its type, as sessions before 2026-07-28 have it; a later one reads an absent
        // type as "complete", which is what it is.
        let mut result = CallToolResult::error(vec![ContentBlock::text(why)]);
        result.result_type = None;
        if let Ok(result) = serde_json::to_vec(&result) {
            self.to_agent.push(answer_line(raw_id, "result", &result));
        }
        self.answered.notify_waiters();
    }
}

impl Lane {
    /// Answers the agent's request `raw_id` (its id as it wrote it, or none when it
    /// could not be read), which could not be read as what it says it is.
    fn refuse_unreadable(&self, raw_id: Option<&[u8]>, unreadable: Unreadable) {
        self.to_agent.push(refusal(raw_id, unreadable));
    }
}

/// The progress token the lane gives the upstream for its call `number` (the agent's
/// own goes no further): rmcp's client numbers its calls' tokens 0, 1, 2…, so an
/// agent's token passed on could be one of those, and the progress of one call be
/// taken for the other's.
fn progress_token(number: u64) -> String {
    format!("{OURS_PROGRESS}{number}")
}

/// The lane's number in a progress `token`, if it is one of the lane's.
fn progress_number(token: &RawValue) -> Option<u64> {
    let token: Cow<'_, str> = serde_json::from_str(token.get()).ok()?;
    token.strip_prefix(OURS_PROGRESS)?.parse().ok()
}

/// Whether a notification with `method` only tells the agent something, which it may
/// miss: progress and log lines, of which an upstream may send any number.
fn only_tells(method: &str) -> bool {
    matches!(method, "notifications/progress" | "notifications/message")
}

/// Gives `message` to `outbox` as one line; false once the outbox's reader has gone.
fn send(outbox: &Arc<Outbox>, message: &Value) -> bool {
    match serde_json::to_vec(message) {
        Ok(mut line) => {
            line.push(b'\n');
            outbox.push(line)
        }
        Err(_) => true,
    }
}

/// Gives rmcp's lines from `from` to `to`, each whole.
async fn lines_to(from: impl AsyncRead + Unpin, to: Arc<Outbox>) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        match read_line(&mut reader, &mut line, LONGEST_FROM_RMCP).await {
            Read::End => break,
            Read::TooLong => continue,
            Read::Line => {
                if !to.push_slice(&line) {
                    break;
                }
            }
        }
    }
}
