//! An agent's close of its side of a session (`send-once mcp`'s door, the proxy's
//! lane): when it came, what is left from then of the wait for the answers the agent
//! is owed, and the wait for room to read its next line, which watches for the close.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::time::Instant;

/// Whether there was room for the agent's next line.
pub enum Room {
    /// There is room: the next line is read.
    Made,
    /// The agent closed its side, and the drain bound passed before there was room.
    NotInTime,
}

/// When the agent closed its side, once it has (or the session stopped reading it).
#[derive(Default)]
pub struct Closing {
    at: OnceLock<Instant>,
}

impl Closing {
    /// Notes the close now, unless it was noted before.
    pub fn closed(&self) {
        let _ = self.at.set(Instant::now());
    }

    /// What is left of `bound` since the close (all of it before): the wait for the
    /// agent's answers and for the work in flight share it.
    pub fn left_of(&self, bound: Duration) -> Duration {
        match self.at.get() {
            Some(at) => bound.saturating_sub(at.elapsed()),
            None => bound,
        }
    }

    /// Waits until `has_room`, told by `room`, watching meanwhile for the end of the
    /// agent's input when nothing more of it is read yet: an agent that closes its side
    /// is answered within `drain` from then (with no bound if `None`), as when the end
    /// comes with room to spare.
    pub async fn room_or_end<R, F>(
        &self,
        reader: &mut BufReader<R>,
        drain: Option<Duration>,
        has_room: impl Fn() -> bool,
        room: impl Fn() -> F,
    ) -> Room
    where
        R: AsyncRead + Unpin,
        F: Future<Output = ()>,
    {
        if has_room() {
            return Room::Made;
        }
        loop {
            if self.at.get().is_some() {
                let Some(bound) = drain else {
                    room().await;
                    return Room::Made;
                };
                return match tokio::time::timeout(self.left_of(bound), room()).await {
                    Ok(()) => Room::Made,
                    Err(_) => Room::NotInTime,
                };
            }
            tokio::select! {
                () = room() => return Room::Made,
                filled = reader.fill_buf(), if reader.buffer().is_empty() => {
                    if filled.map_or(true, |more| more.is_empty()) {
                        self.closed();
                    } else {
                        // More to read: the end, if it comes, is seen after it.
                        room().await;
                        return Room::Made;
                    }
                }
            }
        }
    }
}
