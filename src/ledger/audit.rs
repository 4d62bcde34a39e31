//! What is unknown: the pending entries old enough to be no longer in flight, oldest
//! first, and the ledger's counts, as `audit` reports them.

use super::Ledger;
use super::entry::{Entry, Status};
use super::error::LedgerError;
use super::store::{Census, ListFilter};
use crate::js::time;

/// The pending entries claimed at least `older_than_ms` before `now`, oldest first;
/// the sort is stable, so ties keep the store's order, as the Node library's do. An
/// entry whose claim time cannot age it (see [`placed_in_time`]) is left out of them,
/// as the Node library leaves it out, and given apart, for what is ours to report.
pub(super) fn oldest_unknown(
    entries: Vec<Entry>,
    now: i64,
    older_than_ms: i64,
) -> (Vec<Entry>, Vec<Entry>) {
    let cutoff = now.saturating_sub(older_than_ms);
    let mut found: Vec<(i64, Entry)> = Vec::with_capacity(entries.len());
    let mut unplaced = Vec::new();
    for entry in entries {
        if entry.status() != Status::Pending {
            continue;
        }
        match time::parse_date(entry.claimed_at()) {
            Some(at) if at <= cutoff => found.push((at, entry)),
            Some(at) if placed_at(at, now, older_than_ms) => {}
            _ => unplaced.push(entry),
        }
    }
    found.sort_by_key(|(at, _)| *at);
    (found.into_iter().map(|(_, e)| e).collect(), unplaced)
}

/// Whether a pending entry's claim time says how old it is: it can be read, and it is
/// not further in the future than `older_than_ms` (a claim from a host whose clock is
/// a little ahead is in flight; one a day ahead is a clock nobody can age by).
pub fn placed_in_time(entry: &Entry, now: i64, older_than_ms: i64) -> bool {
    time::parse_date(entry.claimed_at()).is_some_and(|at| placed_at(at, now, older_than_ms))
}

pub(super) fn placed_at(claimed_ms: i64, now: i64, older_than_ms: i64) -> bool {
    claimed_ms.saturating_sub(now) <= older_than_ms
}

/// What `Ledger::audit` found.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    /// When it was taken (ms since the epoch).
    pub now: i64,
    /// The age (ms) past which a pending entry counts as unknown rather than in flight.
    pub older_than_ms: i64,
    /// Counts by status (its `pending_entries` moved to `unknown`).
    pub census: Census,
    /// Pending entries at least `older_than_ms` old, oldest first.
    pub unknown: Vec<Entry>,
    /// Pending entries younger than that (or with an unreadable claim time), and those
    /// [`Audit::still_running`] names.
    pub in_flight: u64,
    /// The keys of pending entries at least `older_than_ms` old that are known to be
    /// still running: their claimer is seen alive here, or the time limit it recorded
    /// has not passed ([`super::claimer::running`]). Not unknown sends yet: no one can
    /// settle what may still be sending. Counted in `in_flight`; a Node claim, which
    /// records neither, is never one.
    pub still_running: Vec<String>,
    /// The keys of the unknown sends whose claimer (an MCP proxy) still listens for a
    /// late answer ([`super::claimer::Running::Listening`]): unknown, and listed, but
    /// marking one failed takes the person's word that they know better.
    pub listening: Vec<String>,
    /// The pending entries counted in `in_flight` whose claim time cannot be read or
    /// lies further in the future than `older_than_ms` (see [`placed_in_time`]). The
    /// Node report counts them in flight, and `audit` prints it as Node does; nothing
    /// but a person can settle them, so `audit --quiet` names them.
    pub unplaced: Vec<Entry>,
}

impl Ledger {
    /// What an audit reports: counts, and the pending entries claimed at least
    /// `older_than_ms` milliseconds ago, oldest first (ties in the store's order).
    pub async fn audit(&self, older_than_ms: i64) -> Result<Audit, LedgerError> {
        let now = self.now();
        let mut census = self.store.census().await?;
        let pending = std::mem::take(&mut census.pending_entries);
        let (aged, unplaced) = oldest_unknown(pending, now, older_than_ms);
        // Where each stands is read once: it may look at the claimer's process and
        // the note of its send.
        let mut still_running = Vec::new();
        let mut listening = Vec::new();
        let mut unknown = Vec::new();
        for entry in aged {
            match super::claimer::running(&entry, now) {
                running if running.known_to_run() => still_running.push(entry.key().to_owned()),
                super::claimer::Running::Listening { .. } => {
                    listening.push(entry.key().to_owned());
                    unknown.push(entry);
                }
                _ => unknown.push(entry),
            }
        }
        Ok(Audit {
            now,
            older_than_ms,
            unplaced,
            listening,
            still_running,
            in_flight: census
                .pending
                .saturating_sub(unknown.len() as u64)
                .saturating_sub(census.unreadable.len() as u64),
            census,
            unknown,
        })
    }

    /// Entries whose outcome is unknown, oldest claim first. `older_than` leaves out
    /// those claimed more recently, which are probably still in flight. An entry whose
    /// claim time cannot be read is left out, as the Node library leaves it out.
    pub async fn pending(
        &self,
        older_than: Option<std::time::Duration>,
    ) -> Result<Vec<Entry>, LedgerError> {
        let older_than_ms =
            older_than.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let pending = self
            .store
            .list(ListFilter {
                status: Some(Status::Pending),
            })
            .await?;
        Ok(oldest_unknown(pending, self.now(), older_than_ms).0)
    }
}
