//! What a server has started for an agent and not yet finished (a forwarded call, a
//! dispatch): its shutdown waits for them within a bound, so an agent that leaves does
//! not cut a send in half.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Calls forwarded and not yet answered, so that shutdown lets them finish.
#[derive(Default)]
pub struct InFlight {
    count: AtomicUsize,
    done: Notify,
}

impl InFlight {
    /// Counts one more in flight, until the guard is dropped.
    pub fn start(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(Arc::clone(self))
    }

    /// How many are in flight.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Told when one finishes (take it, then look at the count).
    pub fn finished(&self) -> tokio::sync::futures::Notified<'_> {
        self.done.notified()
    }

    /// Waits until no forwarded call is in flight, or `bound` passes; whether they all
    /// finished.
    pub async fn settled(&self, bound: Duration) -> bool {
        let wait = async {
            while self.count.load(Ordering::SeqCst) > 0 {
                let notified = self.done.notified();
                if self.count.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        tokio::time::timeout(bound, wait).await.is_ok()
    }
}

/// One call in flight, counted until it is dropped.
pub struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
        self.0.done.notify_waiters();
    }
}
