//! The dispatches a server has running, so that a stop which cannot wait for them
//! ends them on purpose, and then records their claims as stopped (`mcp::left`).
//! Left to the runtime's end, a send command is killed all the same (its process
//! group goes with the task), but its claim stays "sending" until its limit: every
//! screen reads it as running for five minutes, and no one is told it needs a person.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long a stopped dispatch may take to let go of its send command.
const LET_GO: Duration = Duration::from_secs(5);

/// The drafts being dispatched now, and the word that stops them all.
pub struct Dispatching {
    stop: tokio::sync::watch::Sender<bool>,
    running: Mutex<BTreeMap<u64, i64>>,
    next: AtomicU64,
}

impl Default for Dispatching {
    fn default() -> Dispatching {
        Dispatching {
            stop: tokio::sync::watch::Sender::new(false),
            running: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }
}

/// One dispatch of draft `draft_id`, counted until it is dropped.
pub struct DispatchTicket {
    of: Arc<Dispatching>,
    number: u64,
}

impl Drop for DispatchTicket {
    fn drop(&mut self) {
        self.of.lock().remove(&self.number);
    }
}

impl DispatchTicket {
    /// Runs `dispatch` unless the server stops first; then it is dropped where it
    /// stands (a send command with it, by its process group) and None is returned.
    pub async fn run<F: Future>(self, dispatch: F) -> Option<F::Output> {
        let mut stop = self.of.stop.subscribe();
        tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => None,
            done = dispatch => Some(done),
        }
    }
}

impl Dispatching {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, i64>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a dispatch of `draft_id` until the ticket is dropped.
    pub fn start(self: &Arc<Self>, draft_id: i64) -> DispatchTicket {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(number, draft_id);
        DispatchTicket {
            of: Arc::clone(self),
            number,
        }
    }

    /// The drafts being dispatched now, each once, in order.
    pub fn running(&self) -> Vec<i64> {
        let drafts: BTreeSet<i64> = self.lock().values().copied().collect();
        drafts.into_iter().collect()
    }

    /// Stops every dispatch still running, and waits (a few seconds at most) for each
    /// to let go of its send command. What their claims are left as is the caller's
    /// to record ([`crate::mcp::left::settle_left`]).
    pub async fn stop(&self) {
        self.stop.send_replace(true);
        let deadline = tokio::time::Instant::now() + LET_GO;
        while !self.lock().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
