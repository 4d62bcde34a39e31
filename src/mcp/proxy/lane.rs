//! The fast lane: a `pass` call goes from the agent's pipe to the upstream's as the
//! line it is, with only its id changed, and its answer comes back the same way.
//!
//! Everything else (the session's start, lists, reads, `once` and `hold` calls, the
//! proxy's own tool, notifications) goes through rmcp's server and client as before:
//! the lane sits on the pipes beneath them and hands each line either to rmcp or
//! across. Decoding a message into rmcp's types and encoding it again, on each side,
//! cost a `pass` call as much as the whole call straight to the upstream; the lane
//! reads a line's method and tool and nothing more, and rewrites only what must be
//! rewritten. The id must be: the proxy's rmcp client numbers its own requests on
//! the same pipe, and an agent's id could be one of those numbers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};

use super::once::refusal;
use super::outbox::Outbox;
use crate::mcp::in_flight::{InFlight, InFlightGuard};

/// The ids the lane gives the calls it forwards: the prefix no rmcp client uses (its
/// ids are numbers), then a counter.
const OURS: &str = "send-once-pass-";

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

/// The longest line read, as rmcp bounds its own: a longer one is dropped (and read
/// to its end without being kept), so that a peer cannot make the proxy hold an
/// endless line in memory.
const LONGEST_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Which tools' calls take the lane, and how long each may take: `Some(limit)` for a
/// tool whose calls pass, `None` for the rest (they go through rmcp).
pub type Passes = Box<dyn Fn(&str) -> Option<Duration> + Send + Sync>;

/// The lane between the agent's pipes, the upstream's, and rmcp's server and client.
pub struct Lane {
    to_agent: Arc<Outbox>,
    to_upstream: Arc<Outbox>,
    passes: OnceLock<Passes>,
    in_flight: OnceLock<Arc<InFlight>>,
    /// The requests rmcp's server is handling (see [`super::counted`]).
    handling: Arc<InFlight>,
    /// Set once the agent has said `notifications/initialized`: before that, every
    /// line goes to rmcp, which runs the session's start.
    started: AtomicBool,
    /// Set when the upstream's output has ended: a call is then answered at once.
    upstream_gone: AtomicBool,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiting>>,
    /// Requests handed to rmcp's server and not yet answered: an agent that closes its
    /// side may still be reading, and gets their answers before the session ends.
    asked_of_rmcp: AtomicUsize,
    /// Told when a lane call or a request to rmcp is answered.
    answered: tokio::sync::Notify,
    /// How long an agent that has closed its side waits for the answers it is owed.
    drain: OnceLock<Duration>,
    /// When the agent closed its side.
    closed_at: OnceLock<tokio::time::Instant>,
    /// Told when the session stops (a signal, the upstream's exit): the agent's
    /// calls are read no more.
    stopped: tokio::sync::Notify,
    /// The task writing rmcp's answers to the agent, until rmcp's server has stopped.
    from_server: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A call forwarded by the lane and not yet answered.
struct Waiting {
    /// The agent's id.
    id: Value,
    /// The agent's id, as it wrote it.
    raw_id: Box<[u8]>,
    timer: tokio::task::AbortHandle,
    _in_flight: Option<InFlightGuard>,
    /// The call's length: its answer will take about as much room.
    size: usize,
}

impl Drop for Waiting {
    /// A call done with, however it ended, needs its timer no more. (The timer that
    /// gives up on it drops it last thing, when stopping itself no longer matters.)
    fn drop(&mut self) {
        self.timer.abort();
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

/// What a line is, read no further than the lane needs. The id is kept as the text
/// it is in the line, so that it can be replaced there without decoding the message
/// and encoding it again (a duplicate field makes the line not a `Peek`, so the id
/// found is the only one).
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<PeekParams<'a>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow)]
    request_id: Option<&'a RawValue>,
}

/// `line` with `part` replaced by `with`, ending in a newline; `None` if `part` is not
/// a slice of `line` (serde_json borrows a raw value from the line it reads, so it is).
fn spliced(line: &[u8], part: &RawValue, with: &[u8]) -> Option<Vec<u8>> {
    let start = (part.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(part.get().len())?;
    if end > line.len() {
        return None;
    }
    let mut out = Vec::with_capacity(line.len() + with.len() + 1);
    out.extend_from_slice(&line[..start]);
    out.extend_from_slice(with);
    out.extend_from_slice(&line[end..]);
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    Some(out)
}

/// Whether `id` is one JSON-RPC allows a request: a string or a number.
fn request_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// The lane's number in `id`, if it is one of the lane's ids.
fn lane_number(id: &RawValue) -> Option<u64> {
    let id: Cow<'_, str> = serde_json::from_str(id.get()).ok()?;
    id.strip_prefix(OURS)?.parse().ok()
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
            passes: OnceLock::new(),
            in_flight: OnceLock::new(),
            handling: Arc::default(),
            started: AtomicBool::new(false),
            upstream_gone: AtomicBool::new(false),
            next: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
            asked_of_rmcp: AtomicUsize::new(0),
            answered: tokio::sync::Notify::new(),
            drain: OnceLock::new(),
            closed_at: OnceLock::new(),
            stopped: tokio::sync::Notify::new(),
            from_server: Mutex::new(None),
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

    /// Lets `pass` calls take the lane, as `passes` says, counting them in `in_flight`
    /// so that shutdown waits for them; an agent that closes its side gets what it is
    /// owed for up to `drain` before the session ends.
    pub fn open(&self, passes: Passes, in_flight: Arc<InFlight>, drain: Duration) {
        let _ = self.passes.set(passes);
        let _ = self.in_flight.set(in_flight);
        let _ = self.drain.set(drain);
    }

    /// Where the requests rmcp's server is handling are to be counted (by
    /// [`super::counted::Counted`]): they take room as the lane's own calls do.
    pub fn handling(&self) -> Arc<InFlight> {
        Arc::clone(&self.handling)
    }

    /// What is left of `bound` since the agent closed its side (all of it while the
    /// agent is there): the wait for its answers and for the calls in flight share it.
    pub fn left_of(&self, bound: Duration) -> Duration {
        match self.closed_at.get() {
            Some(at) => bound.saturating_sub(at.elapsed()),
            None => bound,
        }
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
            let handled = self.handling.finished();
            if self.has_room() {
                return;
            }
            tokio::select! {
                () = answered => {}
                () = to_agent => {}
                () = to_upstream => {}
                () = handled => {}
            }
        }
    }

    fn has_room(&self) -> bool {
        let (calls, owed) = self
            .waiting
            .lock()
            .map(|w| (w.len(), w.values().map(|call| call.size).sum::<usize>()))
            .unwrap_or_default();
        let calls = calls + self.handling.count();
        let bytes = self.to_agent.waiting() + self.to_upstream.waiting() + owed;
        self.to_agent.has_failed() || (bytes < ROOM && calls < MOST_AT_ONCE)
    }

    /// Whether nothing the agent asked is unanswered.
    fn all_answered(&self) -> bool {
        self.asked_of_rmcp.load(Ordering::SeqCst) == 0
            && self.waiting.lock().map(|w| w.is_empty()).unwrap_or(true)
    }

    /// Waits until everything the agent asked is answered and the answers written,
    /// at most the drain bound.
    async fn answered_all(&self) {
        let Some(bound) = self.drain.get().copied() else {
            return;
        };
        let _ = tokio::time::timeout(bound, async {
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
            match read_line(&mut reader, &mut line).await {
                Read::End => break,
                Read::TooLong => continue,
                Read::Line => {}
            }
            let peek = serde_json::from_slice::<Peek>(&line).ok();
            let answer = peek
                .as_ref()
                .is_some_and(|p| p.method.is_none() && (p.id.is_some() || p.error.is_some()));
            // rmcp leaves the id out of its answer to a request too broken to have one;
            // JSON-RPC 2.0 says it is null there, and a client may look for it.
            let without_id = peek
                .as_ref()
                .is_some_and(|p| p.method.is_none() && p.id.is_none() && p.error.is_some());
            let written = if without_id
                && let Ok(mut message) = serde_json::from_slice::<Value>(&line)
                && let Some(fields) = message.as_object_mut()
            {
                fields.insert("id".to_owned(), Value::Null);
                send(&self.to_agent, &message)
            } else {
                self.to_agent.push_slice(&line)
            };
            // An answer has an id, or is an error about a request too broken to have
            // one: either way, one request fewer is waiting.
            if answer {
                let _ = self
                    .asked_of_rmcp
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
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
                read = async {
                    self.room_for_more().await;
                    read_line(&mut reader, &mut line).await
                } => read,
                () = &mut gone => {
                    reading = false;
                    break;
                }
                () = &mut stopped => break,
            };
            match read {
                Read::End => break,
                Read::TooLong => continue,
                Read::Line => {}
            }
            let peek = serde_json::from_slice::<Peek>(&line).ok();
            let request = peek
                .as_ref()
                .is_some_and(|p| p.method.is_some() && p.id.is_some());
            if let Some(peek) = peek
                && self.take_from_agent(&line, peek).await
            {
                continue;
            }
            if request {
                self.asked_of_rmcp.fetch_add(1, Ordering::SeqCst);
            }
            if server_in.write_all(&line).await.is_err() {
                break;
            }
        }
        // The agent has closed its side (and may still be reading), or the session is
        // stopping: what it asked is answered first. Then rmcp's server sees the end,
        // and the session ends.
        let _ = self.closed_at.set(tokio::time::Instant::now());
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
            match read_line(&mut reader, &mut line).await {
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
                let (Some(id), Some(name)) = (peek.id, peek.params.and_then(|p| p.name)) else {
                    return false;
                };
                if !request_id(id) {
                    return false;
                }
                let Some(limit) = self.passes.get().and_then(|passes| passes(&name)) else {
                    return false;
                };
                self.forward(line, id, limit)
            }
            Some("notifications/cancelled") => {
                let Some(theirs) = peek.params.and_then(|p| p.request_id) else {
                    return false;
                };
                let Ok(theirs) = serde_json::from_str::<Value>(theirs.get()) else {
                    return false;
                };
                // The agent expects no answer now (the protocol says so): the call is
                // forgotten here, and an answer that still comes is dropped.
                let Some(ours) = self.forget(&theirs) else {
                    return false;
                };
                if let Ok(mut message) = serde_json::from_slice::<Value>(line) {
                    message["params"]["requestId"] = Value::String(format!("{OURS}{ours}"));
                    send(&self.to_upstream, &message);
                }
                true
            }
            _ => false,
        }
    }

    /// Sends a `pass` call upstream under an id of the lane's, or answers it at once
    /// when the upstream has gone. False only if the line is not the call it seemed.
    fn forward(self: &Arc<Self>, line: &[u8], raw_id: &RawValue, limit: Duration) -> bool {
        let Ok(id) = serde_json::from_str::<Value>(raw_id.get()) else {
            return false;
        };
        if self.upstream_gone.load(Ordering::SeqCst) {
            self.answer(
                &id,
                "the upstream server has exited, so the call was not sent; the proxy must be restarted".to_owned(),
            );
            return true;
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(message) = spliced(line, raw_id, format!("\"{OURS}{number}\"").as_bytes()) else {
            return false;
        };
        let lane = Arc::downgrade(self);
        let timer = tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            if let Some(lane) = lane.upgrade() {
                lane.gave_up(number, limit);
            }
        })
        .abort_handle();
        let in_flight = self.in_flight.get().map(|f| f.start());
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(
                number,
                Waiting {
                    raw_id: raw_id.get().as_bytes().into(),
                    id,
                    timer,
                    _in_flight: in_flight,
                    size: message.len(),
                },
            );
        }
        self.to_upstream.push(message);
        true
    }

    /// The call `number` was not answered within `limit`: the agent is told, and the
    /// upstream is asked to stop it.
    fn gave_up(&self, number: u64, limit: Duration) {
        let Some(waiting) = self.take_waiting(number) else {
            return;
        };
        let cancel = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": format!("{OURS}{number}"), "reason": "the proxy's limit passed"},
        });
        send(&self.to_upstream, &cancel);
        self.answer(
            &waiting.id,
            format!(
                "the upstream did not answer within {}",
                crate::provider::Limit::new(limit).written
            ),
        );
    }

    /// Whether the lane took this line from the upstream: the answer to one of its
    /// calls, sent on to the agent under the agent's id.
    fn take_from_upstream(&self, line: &[u8]) -> bool {
        // Only an answer to the lane's call has an id of the lane's, a string: an rmcp
        // line is taken no further than this.
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            return false;
        };
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
            // Answered already (the limit passed): the answer has no one to go to.
            return true;
        };
        if let Some(message) = spliced(line, raw_id, &waiting.raw_id) {
            self.to_agent.push(message);
        }
        self.answered.notify_waiters();
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
            self.answer(&call.id, why.to_owned());
        }
    }

    /// Forgets the lane's call that the agent's request `id` is, and gives its number.
    fn forget(&self, id: &Value) -> Option<u64> {
        let number = self
            .waiting
            .lock()
            .ok()?
            .iter()
            .find(|(_, w)| &w.id == id)
            .map(|(number, _)| *number)?;
        self.take_waiting(number);
        self.answered.notify_waiters();
        Some(number)
    }

    /// Answers the agent's call `id` with an error result saying `why`: the call's
    /// fate is the proxy's to tell, as on rmcp's path.
    fn answer(&self, id: &Value, why: String) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": refusal(why)});
        send(&self.to_agent, &message);
        self.answered.notify_waiters();
    }
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
        match read_line(&mut reader, &mut line).await {
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

/// An answer carrying a task handle (protocol version 2025-11-25's `task` member) as
/// well as a result's members, reduced to the handle; `None` for any other line.
/// rmcp's typed result has no `task` member: it would take such an answer for a final
/// result and drop the handle, and the proxy would keep a call still running as sent.
/// Reduced, it is what rmcp takes for a task, which the proxy does not follow and
/// leaves unknown.
fn task_handle_alone(line: &[u8]) -> Option<Vec<u8>> {
    // Most answers do not name a task: they are not parsed again. The searcher is
    // built once: every answer to the agent passes here, `pass` calls' among them.
    static TASK: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"task\""));
    TASK.find(line)?;
    let mut message: Value = serde_json::from_slice(line).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    if !result.get("task").is_some_and(Value::is_object) || result.len() == 1 {
        return None;
    }
    result.retain(|name, _| name == "task" || name == "_meta");
    let mut reduced = serde_json::to_vec(&message).ok()?;
    reduced.push(b'\n');
    Some(reduced)
}

/// What [`read_line`] read.
#[derive(Debug, PartialEq)]
enum Read {
    /// A line, in the buffer, with its newline (or without, at the end).
    Line,
    /// A line longer than [`LONGEST_LINE`], read to its end and dropped.
    TooLong,
    /// The end of the input, or an error reading it.
    End,
}

/// Reads one line into `line` (cleared first), never holding more than
/// [`LONGEST_LINE`] of it: `read_until` could not be bounded, since it returns only
/// at a newline.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>) -> Read {
    line.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf().await {
            Ok(available) => available,
            Err(_) => return Read::End,
        };
        if available.is_empty() {
            return match (too_long, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::End,
                (false, false) => Read::Line,
            };
        }
        let newline = memchr::memchr(b'\n', available);
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long && line.len() + take > LONGEST_LINE {
            too_long = true;
            line.clear();
        }
        if !too_long {
            line.extend_from_slice(&available[..take]);
        }
        reader.consume(take);
        if newline.is_some() {
            return if too_long { Read::TooLong } else { Read::Line };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_task_handle_beside_a_results_members_is_reduced_to_it() {
        let both = br#"{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t"},"content":[],"isError":false,"_meta":{"m":1}}}"#;
        let reduced: Value = serde_json::from_slice(&task_handle_alone(both).unwrap()).unwrap();
        assert_eq!(
            reduced,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"task": {"taskId": "t"}, "_meta": {"m": 1}}})
        );
        for untouched in [
            &br#"{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"task\": done"}]}}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{"task":"a word","content":[]}}"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"\"task\""}}"#,
        ] {
            assert_eq!(task_handle_alone(untouched), None);
        }
    }

    async fn lines_of(input: Vec<u8>) -> Vec<(Read, Vec<u8>)> {
        let mut reader = BufReader::new(std::io::Cursor::new(input));
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let what = read_line(&mut reader, &mut line).await;
            if what == Read::End {
                return read;
            }
            read.push((what, line.clone()));
        }
    }

    fn renamed(line: &str, with: &str) -> Option<String> {
        let peek: Peek = serde_json::from_str(line).ok()?;
        let id = peek.id?;
        request_id(id).then_some(())?;
        String::from_utf8(spliced(line.as_bytes(), id, with.as_bytes())?).ok()
    }

    #[test]
    fn only_the_top_level_id_is_renamed_wherever_it_stands() {
        assert_eq!(
            renamed(
                r#"{"params":{"id":7,"name":"x"},"id":7,"jsonrpc":"2.0","method":"tools/call"}"#,
                r#""send-once-pass-0""#
            )
            .unwrap(),
            "{\"params\":{\"id\":7,\"name\":\"x\"},\"id\":\"send-once-pass-0\",\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}\n"
        );
        // Spaces, an escaped string id, CRLF: the id's own text is what is replaced.
        assert_eq!(
            renamed(
                "{ \"id\" : \"a\\u0062\" , \"method\":\"tools/call\"}\r\n",
                "5"
            )
            .unwrap(),
            "{ \"id\" : 5 , \"method\":\"tools/call\"}\r\n"
        );
    }

    #[test]
    fn a_line_with_two_ids_or_an_id_a_request_cannot_have_is_not_renamed() {
        assert_eq!(
            renamed(r#"{"id":1,"id":2,"method":"tools/call"}"#, "9"),
            None
        );
        for id in ["null", "{}", "[1]", "true"] {
            assert_eq!(
                renamed(&format!(r#"{{"id":{id},"method":"m"}}"#), "9"),
                None,
                "{id}"
            );
        }
    }

    #[test]
    fn only_the_lanes_own_ids_are_taken_back() {
        let number = |id: &str| lane_number(&RawValue::from_string(id.to_owned()).unwrap());
        assert_eq!(number(r#""send-once-pass-12""#), Some(12));
        assert_eq!(number(r#""send-once-pass-\u0031""#), Some(1));
        assert_eq!(number("12"), None);
        assert_eq!(number(r#""send-once-pass-""#), None);
        assert_eq!(number(r#""other-1""#), None);
    }

    #[tokio::test]
    async fn a_line_too_long_is_dropped_whole_and_the_next_one_read() {
        let mut input = vec![b'x'; LONGEST_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n{\"b\":2}");
        let read = lines_of(input).await;
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].0, Read::TooLong);
        assert!(read[0].1.is_empty(), "nothing of the long line is kept");
        assert_eq!(read[1], (Read::Line, b"{\"a\":1}\n".to_vec()));
        // The last line, without its newline, is a line all the same.
        assert_eq!(read[2], (Read::Line, b"{\"b\":2}".to_vec()));
    }

    #[tokio::test]
    async fn a_line_of_the_longest_length_is_kept() {
        let mut input = vec![b'y'; LONGEST_LINE - 1];
        input.push(b'\n');
        let read = lines_of(input).await;
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].0, Read::Line);
        assert_eq!(read[0].1.len(), LONGEST_LINE);
    }
}
