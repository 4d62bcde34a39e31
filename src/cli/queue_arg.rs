//! Opening a ledger's review queue for a command, and what the queue's refusals exit
//! with: shared by the review commands, `policy` and `dispatch`, below all three.

use std::sync::Arc;

use send_once::ledger::{Access, LedgerLocation};
use send_once::open::Open;
use send_once::review::store::QueueStore;
use send_once::review::{Review, ReviewError};

use super::Exit;
use super::ledger_arg::clock;
use super::output::{Kind, Problem, fail_with};

/// Opens the queue of an SQLite ledger that must exist. `Access::ReadOnly` for what
/// only looks.
pub fn open_review(
    location: &LedgerLocation,
    access: Access,
) -> Result<(Review, Arc<dyn QueueStore>), Exit> {
    let store = location
        .open_queue(access)
        .map_err(|e| fail_with(Exit::Refused, super::store_problem(&e)))?;
    Ok((Review::new(Arc::clone(&store), clock()), store))
}

pub fn review_failure(e: ReviewError) -> Exit {
    let (exit, problem) = review_problem(e);
    fail_with(exit, problem)
}

/// A queue error as an exit code and a problem of its kind: no such draft exits 1,
/// as no such entry does, and so does a decision another one stands against (someone
/// decided first, a new revision, a draft already closed), as `resolve` does for an
/// entry that changed or a sent one marked failed (docs/cli.md; hostile round 44:
/// AL9). In a race the loser reads either a decision made first or a closed draft, so
/// both exit alike. Everything else the queue refuses exits 2.
pub fn review_problem(e: ReviewError) -> (Exit, Problem) {
    let problem = match &e {
        ReviewError::NoDraft(id) => {
            let id = *id;
            return (
                Exit::Failed,
                Problem::new(Kind::NotFound, e).with("draft", Some(id)),
            );
        }
        ReviewError::Store(store) => super::store_problem(store),
        ReviewError::DecidedFirst { by, at, state, .. }
        | ReviewError::Closed { by, at, state, .. } => {
            let kind = if matches!(e, ReviewError::DecidedFirst { .. }) {
                Kind::DecidedFirst
            } else {
                Kind::Refused
            };
            let dispatched_at = match &e {
                ReviewError::Closed { dispatched_at, .. } => dispatched_at.clone(),
                ReviewError::DecidedFirst { dispatched, .. } => {
                    dispatched.as_ref().map(|d| d.0.clone())
                }
                _ => None,
            };
            Problem::new(kind, &e)
                .with("by", by.clone())
                .with("at", at.clone())
                .with("state", Some(state.as_str()))
                .with("dispatchedAt", dispatched_at)
        }
        ReviewError::NotTheRevision { now, .. }
        | ReviewError::ChangedMeanwhile { revision: now, .. }
        | ReviewError::EditedMeanwhile { revision: now, .. } => {
            let now = *now;
            Problem::new(Kind::DecidedFirst, &e).with("revision", Some(now))
        }
        ReviewError::AlreadySent { .. }
        | ReviewError::KeyRejected { .. }
        | ReviewError::CouldNotCheck(_) => Problem::new(Kind::Refused, &e),
        _ => Problem::new(Kind::BadInput, &e),
    };
    let exit = if problem.kind == Kind::DecidedFirst || matches!(e, ReviewError::Closed { .. }) {
        Exit::Failed
    } else {
        Exit::Refused
    };
    (exit, problem)
}

/// Runs `work` against the queue; any error is exit 2.
pub fn with_review<T>(
    location: &LedgerLocation,
    access: Access,
    work: impl AsyncFnOnce(&Review) -> Result<T, ReviewError>,
) -> Result<T, Exit> {
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let (review, _store) = open_review(location, access)?;
        work(&review).await.map_err(review_failure)
    })
}
