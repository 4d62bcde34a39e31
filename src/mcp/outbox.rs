//! A pipe written whole lines to without waiting for its reader: the agent's, and the
//! upstream's in the proxy.
//!
//! The proxy reads the agent's calls and the upstream's answers on the one event loop
//! that also writes to each of them. When a write waited for a reader who was not
//! reading (an agent that never reads its answers), the task that made it stopped
//! reading its own side too: the upstream's answers to calls it had made went
//! unread, its pipes filled both ways, and those calls stayed pending in the ledger
//! although they had been made. An outbox takes each line at once: what the pipe
//! takes now is written on the spot (no hand-off in the usual case), and the rest
//! waits, in order, for a task that writes it when the reader makes room. How much
//! may wait is the caller's to bound, by reading no more work while [`Outbox::waiting`]
//! is high (the lane's `room_for_more`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;
use tokio::sync::Notify;

/// How long a buffer of waiting lines may grow by taking the next short line in.
const SHARED_BUFFER: usize = 64 << 10;

/// Lines for one pipe, written in the order given.
pub struct Outbox {
    state: Mutex<State>,
    /// Told whenever some of what waits was written, or writing failed.
    progress: Notify,
    /// Told when writing fails. Apart from `progress`, which is told at every line:
    /// whoever waits only for the reader to go is not woken by each line written.
    failure: Notify,
}

struct State {
    out: Pin<Box<dyn AsyncWrite + Send>>,
    /// Lines not yet wholly written, the first perhaps in part.
    queue: VecDeque<Vec<u8>>,
    /// How much of the first line is written.
    written: usize,
    /// Bytes given and not yet written.
    waiting: usize,
    /// Whether something written has not been flushed.
    unflushed: bool,
    /// Whether a task is writing what waits (it clears this when it is done).
    draining: bool,
    /// Whether a write failed: the reader has gone, and nothing more is written.
    failed: bool,
    /// The error the failed write met (None: the pipe took nothing).
    why: Option<std::io::Error>,
}

impl Outbox {
    /// An outbox writing to `out`.
    pub fn new(out: impl AsyncWrite + Send + 'static) -> Arc<Outbox> {
        Arc::new(Outbox {
            state: Mutex::new(State {
                out: Box::pin(out),
                queue: VecDeque::new(),
                written: 0,
                waiting: 0,
                unflushed: false,
                draining: false,
                failed: false,
                why: None,
            }),
            progress: Notify::new(),
            failure: Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while writing leaves nothing half-updated that matters more than
        // the lines themselves: carry on with what is there.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives `line` to be written after everything given before it; false once a
    /// write has failed (the line is dropped: no one reads it).
    pub fn push(self: &Arc<Self>, line: Vec<u8>) -> bool {
        self.give(Line::Owned(line))
    }

    /// As [`Outbox::push`], copying `line` only if the pipe does not take it at once.
    pub fn push_slice(self: &Arc<Self>, line: &[u8]) -> bool {
        self.give(Line::Borrowed(line))
    }

    fn give(self: &Arc<Self>, line: Line<'_>) -> bool {
        let mut state = self.state();
        if state.failed {
            return false;
        }
        // What the pipe takes now is written now. The no-op waker is never woken:
        // if the pipe is full, the task below polls again with a waker of its own.
        let mut now = Context::from_waker(Waker::noop());
        let written = if !state.draining && state.queue.is_empty() {
            let (written, failed) = write_some(state.out.as_mut(), &mut now, line.as_ref());
            state.unflushed |= written > 0;
            if let Err(why) = failed {
                state.fail(why);
                drop(state);
                self.failure.notify_waiters();
                self.progress.notify_waiters();
                return false;
            }
            written
        } else {
            0
        };
        let rest = &line.as_ref()[written..];
        if !rest.is_empty() {
            state.waiting += rest.len();
            // Short lines share a buffer: one allocation each, held while the reader
            // is away, cost the allocator many times their length (a flood of pings
            // took 3.7 KB of memory for each 41-byte answer waiting).
            match state.queue.back_mut() {
                Some(last) if last.len() + rest.len() <= SHARED_BUFFER => {
                    last.extend_from_slice(rest);
                }
                _ => {
                    let rest = match line {
                        Line::Owned(line) if written == 0 => line,
                        line => line.as_ref()[written..].to_vec(),
                    };
                    state.queue.push_back(rest);
                }
            }
        }
        if state.draining {
            return true;
        }
        let ready = state.write(&mut now).is_ready();
        let failed = state.failed;
        if failed {
            self.failure.notify_waiters();
        }
        if !ready {
            state.draining = true;
            drop(state);
            let outbox = Arc::clone(self);
            tokio::spawn(async move {
                std::future::poll_fn(|cx| outbox.drain(cx)).await;
            });
        } else {
            drop(state);
        }
        self.progress.notify_waiters();
        !failed
    }

    /// Writes what waits, as far as the pipe takes it.
    fn drain(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state();
        let before = (state.waiting, state.failed);
        let poll = state.write(cx);
        if poll.is_ready() {
            // Cleared under the lock: a line given after this is written by its giver.
            state.draining = false;
        }
        let moved = (state.waiting, state.failed) != before || poll.is_ready();
        let failed_now = state.failed && !before.1;
        drop(state);
        if failed_now {
            self.failure.notify_waiters();
        }
        if moved {
            self.progress.notify_waiters();
        }
        poll
    }

    /// Whether everything given is written and flushed (or writing failed, and no
    /// more will be).
    pub fn is_written(&self) -> bool {
        let state = self.state();
        state.failed || (!state.draining && state.queue.is_empty() && !state.unflushed)
    }

    /// Bytes given and not yet written.
    pub fn waiting(&self) -> usize {
        self.state().waiting
    }

    /// Told when some of what waits is written, or writing fails (take it, then look).
    pub fn progressed(&self) -> tokio::sync::futures::Notified<'_> {
        self.progress.notified()
    }

    /// Whether a write has failed: the reader has gone.
    pub fn has_failed(&self) -> bool {
        self.state().failed
    }

    /// Why writing failed, if it did and it was not that the reader closed its end (a
    /// full disk, an I/O error): something a person must be told.
    pub fn write_error(&self) -> Option<String> {
        let state = self.state();
        match &state.why {
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => None,
            Some(e) => Some(e.to_string()),
            None if state.failed => Some("the output took nothing".to_owned()),
            None => None,
        }
    }

    /// Waits until everything given is written and flushed, or writing failed.
    pub async fn drained(&self) {
        self.until(&self.progress, |state| state.failed || !state.draining)
            .await;
    }

    /// Waits until a write fails: the reader has gone.
    pub async fn failed(&self) {
        self.until(&self.failure, |state| state.failed).await;
    }

    /// Waits until `done` holds, looking again each time `told` is told. (A future
    /// from `notified()` hears every `notify_waiters()` after it was made, polled or
    /// not, so none is missed between the look and the wait.)
    async fn until(&self, told: &Notify, done: impl Fn(&State) -> bool) {
        loop {
            let told = told.notified();
            if done(&self.state()) {
                return;
            }
            told.await;
        }
    }
}

/// Writes as much of `bytes` as `out` takes now: how much, and whether a write failed
/// (with its error, or None when the pipe took nothing).
fn write_some(
    mut out: Pin<&mut (dyn AsyncWrite + Send)>,
    cx: &mut Context<'_>,
    bytes: &[u8],
) -> (usize, Result<(), Option<std::io::Error>>) {
    let mut written = 0;
    while written < bytes.len() {
        match out.as_mut().poll_write(cx, &bytes[written..]) {
            Poll::Pending => break,
            Poll::Ready(Ok(0)) => return (written, Err(None)),
            Poll::Ready(Err(e)) => return (written, Err(Some(e))),
            Poll::Ready(Ok(n)) => written += n,
        }
    }
    (written, Ok(()))
}

/// A line given to the outbox: a borrowed one is copied only if it must wait.
enum Line<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

impl AsRef<[u8]> for Line<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Line::Owned(line) => line,
            Line::Borrowed(line) => line,
        }
    }
}

impl State {
    /// Writes the queue out and flushes it; ready when nothing waits (or writing
    /// failed), pending when the pipe is full.
    fn write(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while !self.failed {
            let Some(line) = self.queue.front() else {
                break;
            };
            let (n, failed) = write_some(self.out.as_mut(), cx, &line[self.written..]);
            let whole = self.written + n == line.len();
            self.written += n;
            self.waiting -= n;
            self.unflushed |= n > 0;
            if whole {
                self.queue.pop_front();
                self.written = 0;
            }
            match failed {
                Err(why) => self.fail(why),
                // The pipe is full: the waker given is woken when it has room.
                Ok(()) if !whole => return Poll::Pending,
                Ok(()) => {}
            }
        }
        if self.unflushed && !self.failed {
            match self.out.as_mut().poll_flush(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(e)) => self.fail(Some(e)),
            }
        }
        Poll::Ready(())
    }

    fn fail(&mut self, why: Option<std::io::Error>) {
        self.failed = true;
        self.why = why;
        self.queue.clear();
        self.written = 0;
        self.waiting = 0;
        self.unflushed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_wait_for_a_reader_who_is_not_reading_and_arrive_whole_and_in_order() {
        let (writer, mut reader) = tokio::io::duplex(64);
        let outbox = Outbox::new(writer);
        let lines: Vec<Vec<u8>> = (0..50)
            .map(|n| format!("{n} {}\n", "x".repeat(n * 7)).into_bytes())
            .collect();
        for (n, line) in lines.iter().enumerate() {
            let given = if n % 2 == 0 {
                outbox.push(line.clone())
            } else {
                outbox.push_slice(line)
            };
            assert!(given, "given without waiting");
        }
        assert!(outbox.waiting() > 0, "more than the pipe holds waits");
        let mut read = vec![0; lines.iter().map(Vec::len).sum()];
        reader.read_exact(&mut read).await.unwrap();
        assert_eq!(read, lines.concat());
        outbox.drained().await;
        assert_eq!(outbox.waiting(), 0);
    }

    #[tokio::test]
    async fn what_waits_is_written_as_the_reader_reads_and_a_gone_reader_fails_the_outbox() {
        let (writer, mut reader) = tokio::io::duplex(16);
        let outbox = Outbox::new(writer);
        assert!(outbox.push(vec![b'a'; 100]));
        assert_eq!(outbox.waiting(), 84, "what the pipe did not take waits");
        let progressed = outbox.progressed();
        tokio::pin!(progressed);
        progressed.as_mut().enable();
        let mut read = [0; 60];
        reader.read_exact(&mut read).await.unwrap();
        progressed.await;
        assert!(outbox.waiting() < 84, "room is made as the reader reads");
        drop(reader);
        outbox.failed().await;
        assert!(!outbox.push(b"after\n".to_vec()), "no one reads it");
        outbox.drained().await;
    }
}
