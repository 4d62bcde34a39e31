//! What a stopping MCP server leaves for a person. The sends it claimed and had not
//! ended (a proxy's `once` calls, whose upstream ends with it; a dispatch's command,
//! stopped with its process group) are recorded as stopped, unknown; with every call
//! it found unknown while it ran and that nobody has settled since, they are named
//! with the commands that settle them, where before the server ended without a word.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use std::sync::Arc;
use std::time::Duration;

use crate::ledger::claimer::{self, Claimer};
use crate::ledger::{Entry, Ledger, LedgerError, ListFilter, Receipt, Status};

/// How long a server writes again an answer the ledger could not take: as long as a
/// proxy listens for a late one.
const RECORD_FOR: Duration = claimer::LONGEST_LISTEN;

/// How often it writes it again meanwhile.
pub const RECORD_AGAIN: Duration = Duration::from_secs(5);

/// The keys of the calls this proxy found unknown (a lost answer, a limit passed),
/// and of those answered late that the ledger could not take, with their provider id.
#[derive(Default)]
pub struct Unsettled {
    unknown: Mutex<BTreeSet<String>>,
    made: Mutex<BTreeMap<String, (Option<String>, bool)>>,
}

impl Unsettled {
    /// Notes that the call under `key` is unknown.
    pub fn note(&self, key: &str) {
        lock(&self.unknown).insert(key.to_owned());
    }

    /// Notes that the call under `key` was answered (`late`: after its limit), so
    /// made (the provider's id `provider_id`), and the ledger could not record it.
    pub fn made_unrecorded(&self, key: &str, provider_id: Option<String>, late: bool) {
        lock(&self.made).insert(key.to_owned(), (provider_id, late));
    }

    /// Whether a send made is still to be recorded.
    pub fn holds_made(&self) -> bool {
        !lock(&self.made).is_empty()
    }

    /// Notes that the answer to the call under `key` is recorded.
    pub fn recorded(&self, key: &str) {
        lock(&self.made).remove(key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How a call was left.
pub enum How {
    /// Its send had not ended at the stop, and it is recorded as stopped.
    Stopped,
    /// As `Stopped`, but the record could not be written: it reads as sending until
    /// its limit, then as unknown.
    NotRecorded,
    /// Found unknown while the proxy ran (its error says why); `listened` when the
    /// proxy was still listening for its late answer.
    Unknown {
        /// Whether the proxy still listened for its answer.
        listened: bool,
    },
    /// Answered after its limit, so made (with the provider's id, when it gave
    /// one), and the ledger could not record it.
    MadeUnrecorded {
        /// The provider's id for it.
        provider_id: Option<String>,
        /// Whether the answer came after the call's limit.
        late: bool,
    },
}

/// A call this process leaves unknown.
pub struct LeftOpen {
    /// Its key.
    pub key: String,
    /// Its attempt.
    pub attempt: u64,
    /// When that attempt was claimed.
    pub claimed_at: String,
    /// The call as a person reads it (upstream/tool · recipient), when its meta says.
    pub call: Option<String>,
    /// How it was left.
    pub how: How,
}

impl LeftOpen {
    fn of(entry: &Entry, how: How) -> LeftOpen {
        LeftOpen {
            key: entry.key().to_owned(),
            attempt: entry.attempts(),
            claimed_at: entry.claimed_at().to_owned(),
            call: crate::text::who_and_what(entry.meta()),
            how,
        }
    }
}

/// Records the calls this process claimed and left open as stopped (`why`), and names
/// those and the calls in `unsettled` still pending, oldest claim first.
pub async fn settle_left(
    ledger: &Ledger,
    unsettled: &Unsettled,
    why: &str,
) -> Result<Vec<LeftOpen>, LedgerError> {
    let pending = ledger
        .store()
        .list(ListFilter {
            status: Some(Status::Pending),
        })
        .await?;
    // Read after the entries: a call notes itself unknown before its record is
    // written, so every record read is of a call noted by now.
    let made = lock(&unsettled.made).clone();
    let unsettled = lock(&unsettled.unknown).clone();
    let mut left = Vec::new();
    for entry in pending {
        let open = entry.error().is_none()
            && Claimer::of(&entry).is_some_and(|claimer| claimer.is_this_process());
        // Answered, so made, whether in time or late: never recorded as stopped.
        let how = if let Some((provider_id, late)) = made.get(entry.key()) {
            How::MadeUnrecorded {
                provider_id: provider_id.clone(),
                late: *late,
            }
        } else if open {
            match ledger.record_stopped(&entry, why).await {
                Ok(true) => How::Stopped,
                // Its own call recorded how it ended meanwhile: unknown still, or not.
                Ok(false) => match ledger.get(entry.key()).await {
                    Ok(Some(now)) if now.status() == Status::Pending => {
                        left.push(LeftOpen::of(&now, How::Unknown { listened: false }));
                        continue;
                    }
                    _ => continue,
                },
                Err(_) => How::NotRecorded,
            }
        } else if unsettled.contains(entry.key()) && entry.error().is_some() {
            How::Unknown {
                listened: claimer::listened_here(&entry),
            }
        } else {
            continue;
        };
        left.push(LeftOpen::of(&entry, how));
    }
    left.sort_by(|a, b| a.claimed_at.cmp(&b.claimed_at));
    Ok(left)
}

/// Holds `receipt`, the result of the send claimed under `key` that the ledger could
/// not take when it came (a full disk), with `why`: the send was made. It is noted in
/// `unsettled` at once, so that a stop from now on names it made, never stopped; and
/// its claim is settled sent once the ledger takes it, written again every
/// [`RECORD_AGAIN`] for an hour (hostile round, session 43: AI2, AI3; it was left
/// claimed, then recorded at the stop as stopped before its send ended, or left
/// reading as sending).
pub fn hold_made<R: Receipt + Send + Sync + 'static>(
    ledger: Arc<Ledger>,
    key: String,
    receipt: R,
    unsettled: Arc<Unsettled>,
    why: &'static str,
) {
    unsettled.made_unrecorded(&key, receipt.provider_id(), false);
    tokio::spawn(record_made(ledger, key, receipt, unsettled, why));
}

async fn record_made<R: Receipt + Send + Sync>(
    ledger: Arc<Ledger>,
    key: String,
    receipt: R,
    unsettled: Arc<Unsettled>,
    why: &'static str,
) {
    let deadline = tokio::time::Instant::now() + RECORD_FOR;
    // The claim as it stands: the record goes to this attempt, or to none.
    let claimed = loop {
        match ledger.get(&key).await {
            Ok(Some(entry)) => break entry,
            Ok(None) => return unsettled.recorded(&key),
            Err(_) if tokio::time::Instant::now() + RECORD_AGAIN <= deadline => {
                tokio::time::sleep(RECORD_AGAIN).await;
            }
            Err(_) => return,
        }
    };
    if claimed.status() != Status::Pending || claimed.error().is_some() {
        return unsettled.recorded(&key);
    }
    tokio::time::sleep(RECORD_AGAIN).await;
    record_until(
        &ledger, &claimed, &receipt, why, &unsettled, false, deadline,
    )
    .await;
}

/// Writes `receipt` as what came of the attempt `claimed`, again every
/// [`RECORD_AGAIN`] while the ledger cannot take it, until `deadline`; noted in
/// `unsettled` as made and unrecorded (`late`: answered after its limit) until it is
/// written.
pub async fn record_until<R: Receipt + Send + Sync>(
    ledger: &Ledger,
    claimed: &Entry,
    receipt: &R,
    why: &str,
    unsettled: &Unsettled,
    late: bool,
    deadline: tokio::time::Instant,
) {
    loop {
        match ledger.record_late(claimed, receipt, why).await {
            Ok(_) => return unsettled.recorded(claimed.key()),
            Err(_) => unsettled.made_unrecorded(claimed.key(), receipt.provider_id(), late),
        }
        if tokio::time::Instant::now() + RECORD_AGAIN > deadline {
            return;
        }
        tokio::time::sleep(RECORD_AGAIN).await;
    }
}
