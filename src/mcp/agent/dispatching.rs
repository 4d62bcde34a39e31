//! The dispatches a server has running, so that a stop which cannot wait for them
//! ends them on purpose and says so in the ledger. Left to the runtime's end, a send
//! command is killed all the same (its process group goes with the task), but its
//! claim stays "sending" until its limit: every screen reads it as running for five
//! minutes, and no one is told it needs a person.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::ledger::Ledger;
use crate::ledger::claimer::Claimer;
use crate::review::Review;

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

/// What ends a server's dispatches still running, from outside the session: the
/// dispatches, and the queue and ledger their claims are in.
pub struct Abandon {
    pub(super) dispatching: Arc<Dispatching>,
    pub(super) review: Arc<Review>,
    pub(super) ledger: Arc<Ledger>,
}

impl Abandon {
    /// The drafts being dispatched now, each once, in order.
    pub fn running(&self) -> Vec<i64> {
        self.dispatching.drafts().into_iter().collect()
    }

    /// Ends them (see [`Dispatching::stop`]).
    pub async fn stop(&self, why: &str) -> Vec<Stopped> {
        self.dispatching.stop(&self.review, &self.ledger, why).await
    }
}

/// What became of a dispatch a stop ended.
pub struct Stopped {
    /// The draft.
    pub draft_id: i64,
    /// Its send key.
    pub key: String,
    /// What the ledger holds of it now.
    pub left: Left,
}

/// What a stopped dispatch left in the ledger.
#[derive(Debug, PartialEq, Eq)]
pub enum Left {
    /// Its claim is recorded as stopped: delivery unknown, for a person to settle.
    Unknown {
        /// The attempt stopped.
        attempt: u64,
        /// When it was claimed.
        claimed_at: String,
    },
    /// No claim of this process's was open: it had not claimed, or had finished.
    Nothing,
    /// Its claim could not be recorded as stopped (`why`): it reads as sending until
    /// its limit, then as unknown.
    Sending {
        /// Why it could not be recorded.
        why: String,
        /// The attempt stopped (its number and claim time), when it could be read.
        attempt: Option<(u64, String)>,
    },
}

impl Dispatching {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, i64>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The drafts being dispatched now, each once.
    fn drafts(&self) -> BTreeSet<i64> {
        self.lock().values().copied().collect()
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

    /// Stops every dispatch still running, lets each drop its send command, and
    /// records the claims this process made and left open as stopped: pending, with an
    /// error that says delivery is unknown, so that a person settles them and nothing
    /// sends them again on its own. `why` says what stopped them.
    pub async fn stop(&self, review: &Review, ledger: &Ledger, why: &str) -> Vec<Stopped> {
        let drafts = self.drafts();
        self.stop.send_replace(true);
        let deadline = tokio::time::Instant::now() + LET_GO;
        while !self.lock().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut stopped = Vec::new();
        for draft_id in drafts {
            let Ok(head) = review.head(draft_id).await else {
                continue;
            };
            let left = match ledger.get(&head.key).await {
                Ok(Some(entry))
                    if entry.error().is_none()
                        && Claimer::of(&entry).is_some_and(|c| c.is_this_process()) =>
                {
                    match ledger.record_stopped(&entry, why).await {
                        Ok(true) => Left::Unknown {
                            attempt: entry.attempts(),
                            claimed_at: entry.claimed_at().to_owned(),
                        },
                        // Settled meanwhile, by its own record or a person.
                        Ok(false) => Left::Nothing,
                        Err(e) => Left::Sending {
                            why: e.to_string(),
                            attempt: Some((entry.attempts(), entry.claimed_at().to_owned())),
                        },
                    }
                }
                Ok(_) => Left::Nothing,
                Err(e) => Left::Sending {
                    why: e.to_string(),
                    attempt: None,
                },
            };
            stopped.push(Stopped {
                draft_id,
                key: head.key,
                left,
            });
        }
        stopped
    }
}
