//! `send-once mcp`'s door: every line the agent writes is read here before rmcp's
//! server is given it, and every line rmcp writes goes to the agent through here.
//!
//! - What rmcp could not read (a line that is not JSON or is too long, a request its
//!   types cannot hold) is answered here ([`crate::mcp::wire`]): rmcp would drop it
//!   without a word, and the agent wait for an answer that never comes.
//! - Requests handed to rmcp are counted until their answers come out. An agent that
//!   writes requests and reads no answers is made to wait (its input is read no
//!   further) rather than filling the server's memory with answers.
//! - A session told to stop reads no more requests, lets those already read be
//!   answered, and only then ends: a dispatch that finished while the server was
//!   stopping is told to the agent, not cut off with the session.
//!
//! (The proxy's lane does all of this for `send-once mcp proxy`, beside its own work.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Notify;

use super::asked::AskedOfRmcp;
use super::closing::{Closing, Room};
use super::in_flight::InFlight;
use super::outbox::Outbox;
use super::wire::{
    BYTE_ORDER_MARK, LONGEST_FROM_RMCP, LONGEST_LINE, Read, Unreadable, is_blank, read_line,
    refusal, request, unreadable_line, with_null_id,
};

/// How much may wait to be written to the agent, with the requests rmcp has not
/// answered yet, before the door reads no more of the agent's requests.
const ROOM: usize = 8 << 20;

/// How many requests may wait for rmcp's answer (or a dispatch run) at once before the
/// door reads no more: each holds a task, and a long poll holds it for up to 50 s.
const MOST_AT_ONCE: usize = 64;

/// How much the pipe between the door and rmcp's server holds before its writer waits.
const PIPE: usize = 1 << 16;

/// The door between the agent's pipes and rmcp's server.
pub struct Door {
    to_agent: Arc<Outbox>,
    asked: AskedOfRmcp,
    in_flight: Arc<InFlight>,
    /// Told when rmcp answers a request, or the agent cancels one.
    answered: Notify,
    /// Told when the session stops: the agent's requests are read no more.
    stopped: Notify,
    /// How long an agent that has closed its side waits for what it is owed.
    drain: Duration,
    /// When the agent closed its side.
    closing: Closing,
    /// The task writing rmcp's lines to the agent, until rmcp's server has stopped.
    from_server: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What the door reads of a line rmcp's server wrote: an answer's id, and whether it
/// is an error with no id.
#[derive(Deserialize)]
struct Written<'a> {
    method: Option<IgnoredAny>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    error: Option<IgnoredAny>,
}

/// A cancellation the agent sent: rmcp answers the request it names no more.
#[derive(Deserialize)]
struct Cancelled<'a> {
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: CancelledParams<'a>,
}

#[derive(Deserialize)]
struct CancelledParams<'a> {
    #[serde(rename = "requestId", borrow)]
    request_id: &'a RawValue,
}

impl Door {
    /// Starts the door on the agent's `agent_in` and `agent_out`, counting `in_flight`
    /// (the server's dispatches, which go on when the agent cancels them) against its
    /// room; an agent that closes its side gets what it is owed for up to `drain`.
    /// Gives back the door, and the end rmcp's server is served on.
    pub fn start(
        agent_in: impl AsyncRead + Send + Unpin + 'static,
        agent_out: impl AsyncWrite + Send + 'static,
        in_flight: Arc<InFlight>,
        drain: Duration,
    ) -> (Arc<Door>, DuplexStream) {
        let door = Arc::new(Door {
            to_agent: Outbox::new(agent_out),
            asked: AskedOfRmcp::default(),
            in_flight,
            answered: Notify::new(),
            stopped: Notify::new(),
            drain,
            closing: Closing::default(),
            from_server: Mutex::new(None),
        });
        let (server, door_side) = tokio::io::duplex(PIPE);
        let (server_out, server_in) = tokio::io::split(door_side);
        let from_server = tokio::spawn(Arc::clone(&door).from_server(server_out));
        if let Ok(mut slot) = door.from_server.lock() {
            *slot = Some(from_server);
        }
        tokio::spawn(Arc::clone(&door).from_agent(agent_in, server_in));
        (door, server)
    }

    /// Stops reading the agent's requests: the session is stopping. What was asked
    /// already is answered first (within the drain bound), then the session ends.
    pub fn stop(&self) {
        self.stopped.notify_one();
    }

    /// What is left of `bound` since the agent closed its side (all of it while the
    /// agent is there): the wait for its answers and for the work in flight share it.
    pub fn left_of(&self, bound: Duration) -> Duration {
        self.closing.left_of(bound)
    }

    /// Waits, at most `bound`, until everything rmcp's server wrote (it has stopped)
    /// has reached the agent.
    pub async fn flushed(&self, bound: Duration) {
        let from_server = self
            .from_server
            .lock()
            .ok()
            .and_then(|mut slot| slot.take());
        let _ = tokio::time::timeout(bound, async {
            if let Some(task) = from_server {
                let _ = task.await;
            }
            self.to_agent.drained().await;
        })
        .await;
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

    async fn from_agent(
        self: Arc<Self>,
        agent_in: impl AsyncRead + Unpin,
        mut server_in: impl AsyncWrite + Unpin,
    ) {
        let mut reader = BufReader::new(agent_in);
        let mut line = Vec::new();
        // No one reads the answers any more, or the session is stopping: no more
        // requests are taken.
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
                    self.to_agent.push(refusal(None, Unreadable::TooLong));
                    continue;
                }
                Read::Line => {}
            }
            if line.starts_with(BYTE_ORDER_MARK) {
                line.drain(..BYTE_ORDER_MARK.len());
            }
            if is_blank(&line) {
                continue;
            }
            // A cancellation takes no room and may free some: it is taken at once, even
            // while the room is full. Anything else waits for room.
            let cancelled = serde_json::from_slice::<Cancelled>(&line)
                .ok()
                .filter(|c| c.method == "notifications/cancelled");
            if cancelled.is_none() {
                let room = self.closing.room_or_end(
                    &mut reader,
                    Some(self.drain),
                    || self.has_room(),
                    || self.room(),
                );
                let room = tokio::select! {
                    room = room => room,
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
            match request(&line) {
                Some(asked) => {
                    if let Err(refused) = self.asked.admit(&line, &asked) {
                        self.to_agent.push(refused);
                        continue;
                    }
                }
                None => {
                    if let Some(answer) = unreadable_line(&line) {
                        self.to_agent.push(answer);
                        continue;
                    }
                }
            }
            if server_in.write_all(&line).await.is_err() {
                break;
            }
            // rmcp answers a request the agent cancelled no more: it waits no longer.
            // (A dispatch goes on, and counts in flight until it ends.)
            if let Some(cancelled) = &cancelled
                && self.asked.cancelled(cancelled.params.request_id.get())
            {
                self.answered.notify_waiters();
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
            let written = serde_json::from_slice::<Written>(&line).ok();
            let answered = written
                .as_ref()
                .filter(|w| w.method.is_none())
                .and_then(|w| w.id);
            let without_id = written
                .as_ref()
                .is_some_and(|w| w.method.is_none() && w.id.is_none() && w.error.is_some());
            // Once the agent has gone, its answers are not written, but rmcp's are
            // still read, so that rmcp is not left waiting to write them.
            match without_id.then(|| with_null_id(&line)).flatten() {
                Some(line) => self.to_agent.push(line),
                None => self.to_agent.push_slice(&line),
            };
            if let Some(id) = answered
                && self.asked.ended(id.get())
            {
                self.answered.notify_waiters();
            }
        }
    }

    /// Whether there is room for another request and its answer: see [`ROOM`] and
    /// [`MOST_AT_ONCE`]. There always is once the agent has gone.
    fn has_room(&self) -> bool {
        let (asked, owed) = self.asked.waiting();
        let requests = asked.max(self.in_flight.count());
        self.to_agent.has_failed()
            || (self.to_agent.waiting() + owed < ROOM && requests < MOST_AT_ONCE)
    }

    /// Waits until [`Door::has_room`].
    async fn room(&self) {
        loop {
            // Taken before the look, they hear whatever changes after it.
            let answered = self.answered.notified();
            let written = self.to_agent.progressed();
            let finished = self.in_flight.finished();
            if self.has_room() {
                return;
            }
            tokio::select! {
                () = answered => {}
                () = written => {}
                () = finished => {}
            }
        }
    }

    /// Waits until everything the agent asked is answered and the answers written,
    /// at most the drain bound.
    async fn answered_all(&self) {
        let _ = tokio::time::timeout(self.left_of(self.drain), async {
            loop {
                let answered = self.answered.notified();
                if self.asked.waiting().0 == 0 {
                    break;
                }
                answered.await;
            }
            self.to_agent.drained().await;
        })
        .await;
    }
}
