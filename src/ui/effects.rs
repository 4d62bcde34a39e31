//! The effects the screen asks for, run off its path: loads (one of each kind at a time,
//! the newest wins), decisions written to the ledger or the queue, edits saved, verify
//! asked; each answered with an action.

use super::Backend;
use super::action::{Action, Effect, Outcome};
use super::app::App;
use super::kept::keep_file;
use super::watch::{Current, not_there};
use crate::approval::Ttl;
use crate::ledger::{Clock, LedgerError, ResolveDetails, Store};
use crate::review::{Review, Verdict};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// A kind of load against one opening of the ledger, so the same load is not started
/// twice while one runs.
pub(super) type LoadSlot = (&'static str, u64);

/// The loads running, one a kind (and ledger file), and the one asked for while each
/// ran, which runs when it ends: a change reported while a load was reading is never
/// dropped, and a ledger page never shows an older read over a newer one.
#[derive(Default)]
pub(super) struct Loads {
    pub(super) running: HashSet<LoadSlot>,
    pub(super) again: HashMap<LoadSlot, (Effect, u64)>,
}

pub(super) fn load_kind(effect: &Effect) -> Option<&'static str> {
    match effect {
        Effect::LoadApprovals => Some("approvals"),
        Effect::LoadUnknown => Some("unknown"),
        Effect::LoadLedger(_) => Some("ledger"),
        Effect::LoadCounts => Some("counts"),
        Effect::LoadDecisions => Some("decisions"),
        Effect::CheckChain => Some("chain"),
        Effect::LoadHistory(_) => Some("history"),
        Effect::LoadDraft(_) => Some("draft"),
        _ => None,
    }
}

/// Runs effects off the UI's path and sends back what came of them.
pub(super) struct Runner {
    pub(super) current: Current,
    pub(super) path: PathBuf,
    pub(super) tx: UnboundedSender<Action>,
    pub(super) done: UnboundedSender<LoadSlot>,
    /// Which opening of the ledger the app has been told of (and so has shown).
    pub(super) shown: u64,
    /// The UI's clock, so that an answer is stamped when it came, not at the last tick.
    pub(super) clock: Clock,
}

impl Runner {
    /// Hands `action` to the app, keeping each effect with the opening of the ledger
    /// the app knew of when it asked for it.
    pub(super) fn update(
        &mut self,
        app: &mut App,
        action: Action,
        effects: &mut Vec<(Effect, u64)>,
    ) {
        if matches!(action, Action::LedgerBack { reopened: true }) {
            self.shown += 1;
            app.writes_refused = self.current.get().backend.writes_refused.clone();
        }
        let shown = self.shown;
        effects.extend(app.update(action).into_iter().map(|e| (e, shown)));
    }

    pub(super) fn run(&self, effect: Effect, shown: u64, in_flight: &mut Loads) {
        if matches!(
            effect,
            Effect::Quit | Effect::Page { .. } | Effect::Copy { .. } | Effect::Edit { .. }
        ) {
            return;
        }
        if let Effect::Verify {
            key,
            entry,
            argv,
            timeout,
            by,
            command,
        } = effect
        {
            let tx = self.tx.clone();
            let clock = Arc::clone(&self.clock);
            let ledger = self.current.get().backend.ledger.clone();
            tokio::spawn(async move {
                let answer = verify(&key, &entry, &argv, &timeout).await;
                // Kept before it is shown, so a "happened" stands against marking the
                // attempt failed, here or on anyone's screen (K1).
                let kept = ledger
                    .record_verify(&entry, &by, &answer, Some(&command))
                    .await;
                // The answer's time is when it came (the note a person may record
                // says so), not the last tick's.
                let _ = tx.send(Action::Tick(clock()));
                let _ = tx.send(Action::Verified {
                    key: key.clone(),
                    seen: crate::ledger::Seen::entry(&entry),
                    answer,
                });
                if let Err(why) = kept {
                    let why = why.to_string();
                    let _ = tx.send(Action::VerifyNotKept { key, why });
                }
            });
            return;
        }
        let opened = self.current.get();
        // A decision confirmed before the app heard that another file was opened is
        // about the old one.
        let reopened_since = opened.generation != shown;
        let kind = load_kind(&effect);
        // Histories and drafts each answer a question of their own and run at once.
        // The rest run one at a time a kind: asked for while one runs, the newest ask
        // waits for it (a ledger page too: the screen drops an answer to a page no
        // longer shown, and shows the last one read).
        let slot = kind
            .filter(|k| !matches!(*k, "history" | "draft"))
            .map(|k| (k, opened.generation));
        if let Some(slot) = slot
            && !in_flight.running.insert(slot)
        {
            in_flight.again.insert(slot, (effect, shown));
            return;
        }
        let (current, path, tx, done) = (
            self.current.clone(),
            self.path.clone(),
            self.tx.clone(),
            self.done.clone(),
        );
        tokio::spawn(async move {
            let action = if kind.is_some() {
                let action = load(effect, &opened.backend).await;
                // A load that raced the file's deletion may have read nothing at all
                // (a JSON Lines ledger reads as empty): it must not show as "0 pending".
                match (action, not_there(&path, opened.file)) {
                    _ if current.get().generation != opened.generation => None,
                    (Some(action), Some(why)) => Some(failed_load(action, why)),
                    (action, None) => action,
                    (None, Some(_)) => None,
                }
            } else {
                let outcome = if reopened_since {
                    refused_all(
                        &effect,
                        format!(
                            "Refused, nothing was written: {} was replaced by another file just now. Look at it again and decide anew.",
                            path.display()
                        ),
                    )
                } else if let Some(why) = not_there(&path, opened.file) {
                    refused_all(&effect, format!("Refused, nothing was written: {why}."))
                } else {
                    let outcome = decide(effect, &opened.backend).await;
                    match not_there(&path, opened.file) {
                        Some(_) if outcome.ok() => Outcome::Refused {
                            subject: String::new(),
                            why: format!(
                                "It was written, but the ledger's file was deleted or replaced as this was written, so it may not be in {} now: look before deciding again.",
                                path.display()
                            ),
                        },
                        _ => outcome,
                    }
                };
                Some(Action::Done(outcome))
            };
            // The answer goes first: the load asked for again while this one ran starts
            // only once the slot is free, so its answer queues behind this one and an
            // older page never lands over a newer one. (Freed first, a sender slowed
            // between the two could see the newer answer shown, then replaced by this.)
            if let Some(action) = action {
                let _ = tx.send(action);
            }
            if let Some(slot) = slot {
                let _ = done.send(slot);
            }
        });
    }
}

/// Asks the verify command about `entry`. Its stderr is kept out of the screen (the
/// tail is in an inconclusive answer); past `timeout` its process group is killed.
pub(super) async fn verify(
    key: &str,
    entry: &crate::ledger::Entry,
    argv: &[String],
    timeout: &crate::provider::Limit,
) -> crate::provider::CheckAnswer {
    use tracing::Instrument;
    let span = tracing::info_span!(
        "verify",
        key = %key,
        attempt = entry.attempts(),
        gate = "tui",
        outcome = tracing::field::Empty
    );
    let check = crate::provider::CheckCommand {
        kind: crate::provider::CheckKind::Verify,
        argv,
        timeout,
        echo_stderr: false,
    };
    let answer = check.ask(entry).instrument(span.clone()).await;
    span.record("outcome", answer.name());
    answer
}

/// The same refusal for a decision, or for every decision of a batch.
pub(super) fn refused_all(effect: &Effect, why: String) -> Outcome {
    match effect {
        Effect::Batch(items) => Outcome::Batch(
            items
                .iter()
                .map(|item| refused_all(item, why.clone()))
                .collect(),
        ),
        // The edited text goes back with the refusal, for the next `e`.
        Effect::SaveEdit {
            id,
            key,
            revision,
            version,
            payload,
            ..
        } => not_saved_edit(*id, key, *revision, *version, why, payload),
        other => Outcome::Refused {
            subject: subject_of(other),
            why,
        },
    }
}

/// An edit that could not be saved, kept twice: for the next `e` on the same draft,
/// and in an owner-only file named in `why`, so that quitting (or another file
/// opened at the path) never loses it.
pub(super) fn not_saved_edit(
    id: i64,
    key: &str,
    revision: i64,
    version: i64,
    why: String,
    payload: &str,
) -> Outcome {
    let why = why.trim_end_matches('.');
    let why = match keep_file(id, payload) {
        Ok(path) => format!("{why}; your edit is also kept in {}", path.display()),
        Err(e) => format!("{why}; your edit could not be kept in a file ({e})"),
    };
    Outcome::EditNotSaved {
        id,
        key: key.to_owned(),
        revision,
        version,
        why,
        kept: Some(payload.to_owned()),
    }
}

/// What a decision is about, as a refusal names it.
pub(super) fn subject_of(effect: &Effect) -> String {
    match effect {
        Effect::Approve { id, .. }
        | Effect::Reject { id, .. }
        | Effect::Recheck { id }
        | Effect::SaveEdit { id, .. } => format!("draft {id}"),
        Effect::Resolve { key, .. } => key.clone(),
        _ => String::new(),
    }
}

/// A load's answer replaced by why it cannot be trusted.
pub(super) fn failed_load(action: Action, why: String) -> Action {
    match action {
        Action::ApprovalsLoaded(_) => Action::ApprovalsLoaded(Err(why)),
        Action::UnknownLoaded(_) => Action::UnknownLoaded(Err(why)),
        Action::PendingLoaded { .. } => Action::PendingLoaded {
            entries: Err(why),
            unreadable: Vec::new(),
        },
        Action::LedgerLoaded { query, .. } => Action::LedgerLoaded {
            query,
            result: Err(why),
        },
        Action::CountsLoaded(_) => Action::CountsLoaded(Err(why)),
        Action::DecisionsLoaded(_) => Action::DecisionsLoaded(Err(why)),
        Action::ChainChecked(_) => Action::ChainChecked(Err(why)),
        Action::DraftLoaded { id, .. } => Action::DraftLoaded {
            id,
            result: Err(why),
        },
        Action::HistoryLoaded { subject, .. } => Action::HistoryLoaded {
            subject,
            result: Err(why),
        },
        other => other,
    }
}

/// Loads what a view shows.
pub(super) async fn load(effect: Effect, backend: &Backend) -> Option<Action> {
    Some(match effect {
        Effect::LoadApprovals => Action::ApprovalsLoaded(match backend.review.clone() {
            Some(review) => review.queue().await.map_err(|e| e.to_string()),
            None => Err("this ledger has no review queue".to_owned()),
        }),
        Effect::LoadUnknown => match unknown_sends(&backend.store).await {
            Ok((entries, unreadable)) => Action::PendingLoaded {
                entries: Ok(entries),
                unreadable,
            },
            Err(why) => Action::UnknownLoaded(Err(why)),
        },
        Effect::LoadLedger(query) => {
            let result = backend.store.page(&query).await.map_err(|e| e.to_string());
            Action::LedgerLoaded { query, result }
        }
        Effect::LoadCounts => Action::CountsLoaded(counts(&backend.store).await),
        Effect::LoadDecisions => Action::DecisionsLoaded(newest_decisions(&backend.store).await),
        Effect::CheckChain => Action::ChainChecked(check_chain(&backend.store).await),
        Effect::LoadDraft(id) => Action::DraftLoaded {
            id,
            result: match backend.review.clone() {
                Some(review) => review
                    .draft(id)
                    .await
                    .map(Box::new)
                    .map_err(|e| e.to_string()),
                None => Err("this ledger has no review queue".to_owned()),
            },
        },
        Effect::LoadHistory(subject) => {
            let result = history_decisions(&backend.store, &subject)
                .await
                .map_err(|e| e.to_string());
            Action::HistoryLoaded { subject, result }
        }
        _ => return None,
    })
}

/// The decisions about `subject`, and for a key those about the drafts its `submit`
/// decisions name: a send made from the queue shows its edits and votes (AK3).
async fn history_decisions(
    store: &Arc<dyn Store>,
    subject: &str,
) -> Result<Vec<crate::ledger::Decision>, crate::ledger::StoreError> {
    let mut decisions = store.decisions(Some(subject)).await?;
    if !subject.starts_with("draft:") {
        for id in crate::review::history::drafts_of_key(&decisions) {
            let about = store.decisions(Some(&format!("draft:{id}"))).await?;
            decisions.extend(about);
        }
    }
    Ok(decisions)
}

/// Verifies the whole decision log's chain, hashing off the async threads.
pub(super) async fn check_chain(
    store: &Arc<dyn Store>,
) -> Result<crate::ledger::chain::Report, String> {
    crate::ledger::chain::verify_store(store)
        .await
        .map_err(|e| e.to_string())
}

/// The newest decisions, newest first.
pub(super) async fn newest_decisions(
    store: &Arc<dyn Store>,
) -> Result<Vec<crate::ledger::decision::Decision>, String> {
    let query = crate::ledger::DecisionQuery {
        limit: super::app::DECISIONS_SHOWN,
        ..Default::default()
    };
    store
        .decisions_page(&query)
        .await
        .map_err(|e| e.to_string())
}

/// Makes a decision (or each of a batch, one after another) and says what came of it.
pub(super) async fn decide(effect: Effect, backend: &Backend) -> Outcome {
    if let Effect::Batch(items) = effect {
        let mut outcomes = Vec::with_capacity(items.len());
        for item in items {
            outcomes.push(Box::pin(decide(item, backend)).await);
        }
        return Outcome::Batch(outcomes);
    }
    let subject = subject_of(&effect);
    let refused = |why: String| Outcome::Refused {
        subject: subject.clone(),
        why,
    };
    let queue = || {
        backend
            .review
            .clone()
            .ok_or_else(|| "this ledger has no review queue".to_owned())
    };
    let decided = match effect {
        Effect::Approve {
            id,
            revision,
            version,
            ttl,
            by,
            note,
        } => match queue() {
            Ok(review) => approve(&review, id, revision, version, ttl, by, note).await,
            Err(why) => Err(why),
        },
        Effect::Reject {
            id,
            version,
            reason,
            by,
        } => match queue() {
            Ok(review) => reject(&review, id, version, reason, by).await,
            Err(why) => Err(why),
        },
        Effect::Recheck { id } => match queue() {
            Ok(review) => recheck(&review, id).await,
            Err(why) => Err(why),
        },
        Effect::SaveEdit {
            id,
            key,
            revision,
            version,
            payload,
            by,
        } => match queue() {
            Ok(review) => Ok(save_edit(&review, id, &key, revision, version, payload, by).await),
            Err(why) => Err(why),
        },
        Effect::Resolve {
            key,
            status,
            by,
            note,
            provider_id,
            seen,
            even_if_running,
            even_if_found,
        } => {
            let details = ResolveDetails {
                by: Some(by),
                note,
                provider_id,
                seen: Some(seen),
                evidence: None,
                even_if_running,
                even_if_found,
            };
            resolve(backend, key, status, details).await
        }
        other => Err(format!("not a decision: {other:?}")),
    };
    decided.unwrap_or_else(refused)
}

/// An approval of the revision shown: a vote toward a quorum, or the approval made.
async fn approve(
    review: &Review,
    id: i64,
    revision: i64,
    version: i64,
    ttl: String,
    by: String,
    note: Option<String>,
) -> Result<Outcome, String> {
    let verdict = Verdict::Approve {
        ttl: Ttl::Text(ttl),
        revision: Some(revision),
    };
    let draft = review
        .decide_seen(id, verdict, Some(by), note, Some(version))
        .await
        .map_err(|e| e.to_string())?;
    let tally = draft.tally(review.now());
    if draft.needs_quorum() && !tally.complete {
        return Ok(Outcome::Voted {
            id,
            revision,
            so_far: tally.label(),
            missing: tally.missing(),
        });
    }
    Ok(Outcome::Approved {
        id,
        revision,
        expires_at: draft
            .approval
            .as_ref()
            .and_then(|a| a["expiresAt"].as_str())
            .unwrap_or("?")
            .to_owned(),
        approvers: draft
            .needs_quorum()
            .then(|| (tally.names().join(", "), tally.votes.len())),
    })
}

/// A rejection of the draft as shown.
async fn reject(
    review: &Review,
    id: i64,
    version: i64,
    reason: String,
    by: String,
) -> Result<Outcome, String> {
    let verdict = Verdict::Reject {
        reason: reason.clone(),
    };
    let draft = review
        .decide_seen(id, verdict, Some(by), Some(reason), Some(version))
        .await
        .map_err(|e| e.to_string())?;
    // A dispatch that claimed the key first may be sending: the reject is written, and
    // the screen says what it could not stop (N3).
    match review.ledger_entry(&draft.key).await {
        Ok(Some(entry)) if entry.status() != crate::ledger::Status::Failed => Err(format!(
            "Rejected draft {id}, but its key is {} (attempt {}, claimed at {}): a dispatch began before the rejection, so it may have gone out.",
            entry.status().as_str(),
            entry.attempts(),
            crate::text::visible_inline(entry.claimed_at())
        )),
        _ => Ok(Outcome::Rejected { id }),
    }
}

/// The draft's facts asked for again, and how they compare.
async fn recheck(review: &Review, id: i64) -> Result<Outcome, String> {
    review
        .recheck(id, crate::review::recheck::DEFAULT_TIMEOUT)
        .await
        .map_err(|e| format!("Draft {id}: {e}"))?;
    Ok(Outcome::Rechecked {
        id,
        summary: review
            .head(id)
            .await
            .map(|d| d.drift().summary())
            .unwrap_or_default(),
    })
}

/// The send under `key` as a person reads it: its recipient and intent, with its short
/// key; its short key alone when the ledger does not say more.
async fn named(backend: &Backend, key: &str) -> String {
    let short = super::app::short_key(key);
    match backend.ledger.get(key).await {
        Ok(Some(entry)) => match crate::text::who_and_what(entry.meta()) {
            Some(who) => format!("{} ({short})", crate::text::visible_inline(&who)),
            None => short,
        },
        _ => short,
    }
}

/// An unknown send marked sent or failed, if it is still as it was shown; each refusal
/// says what changed and what to do.
async fn resolve(
    backend: &Backend,
    key: String,
    status: crate::ledger::Status,
    details: ResolveDetails,
) -> Result<Outcome, String> {
    let seen_attempt = details.seen.as_ref().and_then(|s| s.attempts);
    let resolved = backend.ledger.resolve(&key, status, &details).await;
    if let Ok(resolved) = &resolved
        && resolved.changed
    {
        return Ok(Outcome::Resolved { key, status });
    }
    // A refusal names the send as a person knows it: the list it was picked from may
    // have moved on, and the selection with it, by the time it is read (AG6).
    let short = named(backend, &key).await;
    match resolved {
        // Recording sent an attempt someone marked failed, and a run sent it again
        // meanwhile: the provider may now have it twice (S6).
        Ok(resolved) if seen_attempt.is_some_and(|n| n != resolved.entry.attempts()) => {
            Err(format!(
                "{short} was sent again meanwhile, as attempt {} at {}: nothing changed, and if attempt {} reached the provider too, it has this send twice.",
                resolved.entry.attempts(),
                crate::text::visible_inline(resolved.entry.claimed_at()),
                seen_attempt.unwrap_or(0)
            ))
        }
        Ok(resolved) => Err(format!(
            "{short} was already {}{}; nothing changed.",
            resolved.entry.status().as_str(),
            resolution_by(&resolved.entry)
        )),
        Err(LedgerError::ChangedSinceSeen { now, change, .. }) => {
            let again = sent_again_hint(backend, &key, status, &now, &details);
            Err(format!(
                "{short} changed after it was shown: it is now {now}, {change}. Nothing changed.{again}"
            ))
        }
        Err(LedgerError::AlreadySent(_)) => {
            let by = match backend.ledger.get(&key).await {
                Ok(Some(entry)) => resolution_by(&entry),
                _ => String::new(),
            };
            Err(format!(
                "{short} is already recorded as sent{by}; it cannot be marked failed. Nothing changed."
            ))
        }
        Err(LedgerError::MayStillRun { attempt, why, .. }) => Err(format!(
            "{short}: attempt {attempt} is pending and {why}. Marked failed, the next run would send it alongside. Nothing changed: wait for it, or if you know it has stopped, mark it with `send-once resolve ... failed --even-if-running`."
        )),
        Err(LedgerError::FoundByVerify { attempt, found, .. }) => {
            let why = format!(
                "{short}: attempt {attempt} is pending, and {}. Marked failed, the next run sends it a second time; nothing changed. The row keeps that answer now: Enter records it sent; if its record is of another message, f asks you to type the evidence to go against it.",
                found.describe()
            );
            match backend.ledger.get(&key).await {
                Ok(Some(entry)) => Ok(Outcome::FoundElsewhere {
                    key,
                    seen: crate::ledger::Seen::entry(&entry),
                    found,
                    why,
                }),
                _ => Err(why),
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Marking it sent, on the provider's word, and someone marked it failed meanwhile: the
/// next run sends it again unless it is recorded, and no view settles a failed entry
/// (K2). Says where it can be recorded.
fn sent_again_hint(
    backend: &Backend,
    key: &str,
    status: crate::ledger::Status,
    now: &str,
    details: &ResolveDetails,
) -> String {
    if status != crate::ledger::Status::Sent || !now.starts_with("failed") {
        return String::new();
    }
    let quote = |t: &str| crate::text::visible_inline(&shell_words::quote(t)).into_owned();
    let id = details
        .provider_id
        .as_deref()
        .map(|id| format!(" --provider-id {}", quote(id)))
        .unwrap_or_default();
    format!(
        " You were recording it sent: the next run sends it again. Press 3 (it is shown there) and s records it sent (with verify's answer filled in, when v found it). In a shell: send-once resolve {} {} sent --expect failed{id}",
        quote(&backend.label),
        quote(key)
    )
}

/// Saves an edit as a new revision, if the draft is still as it was when the edit
/// began. An edit refused because the draft moved on (or is gone) is written to a
/// file of its own, named in the reason; any other refusal gives the text back for
/// the next `e`.
pub(super) async fn save_edit(
    review: &Review,
    id: i64,
    key: &str,
    revision: i64,
    version: i64,
    payload: String,
    by: String,
) -> Outcome {
    use crate::review::{Edit, Edited, ReviewError};
    let edit = Edit {
        id,
        payload: payload.clone(),
        by: Some(by.clone()),
        note: None,
        seen_revision: Some(revision),
        seen_version: Some(version),
    };
    let not_saved = |why: String, kept: Option<String>| Outcome::EditNotSaved {
        id,
        key: key.to_owned(),
        revision,
        version,
        why,
        kept,
    };
    match review.edit(edit).await {
        Ok(Edited::Revised {
            revision,
            state,
            voided,
            ..
        }) => Outcome::Edited {
            id,
            revision,
            by,
            was_approved: state == crate::review::DraftState::Approved,
            voided,
        },
        Ok(Edited::Unchanged { revision, .. }) => Outcome::EditUnchanged { id, revision },
        Err(
            e @ (ReviewError::EditedMeanwhile { .. }
            | ReviewError::Closed { .. }
            | ReviewError::NoDraft(_)),
        ) => {
            let why = with_reason(review, id, e.to_string()).await;
            match keep_file(id, &payload) {
                Ok(path) => not_saved(
                    format!(
                        "{}; your edit is kept in {}",
                        why.trim_end_matches('.'),
                        path.display()
                    ),
                    None,
                ),
                Err(e) => not_saved(
                    format!("{why}; your edit could not be kept in a file ({e})"),
                    Some(payload),
                ),
            }
        }
        Err(e) => not_saved_edit(id, key, revision, version, e.to_string(), &payload),
    }
}

/// `why` an edit of draft `id` was refused, with the reason given when the draft was
/// rejected (or the note when withdrawn) meanwhile: "it was rejected by sam at T" says
/// who, and the person who edited needs the why too. The reason is the rejecter's
/// text: made visible.
pub(super) async fn with_reason(review: &Review, id: i64, why: String) -> String {
    let Ok(draft) = review.head(id).await else {
        return why;
    };
    let (Some(reason), Some(by), Some(at)) = (
        draft
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty()),
        draft.decided_by.as_deref(),
        draft.decided_at.as_deref(),
    ) else {
        return why;
    };
    let (state, said) = match draft.state {
        crate::review::DraftState::Rejected => ("rejected", "reason"),
        crate::review::DraftState::Withdrawn => ("withdrawn", "note"),
        _ => return why,
    };
    let reason = crate::text::visible_inline(reason);
    // After "it was rejected by sam at T", where the refusal names the decision.
    let named = format!("{state} by {by} at {at}");
    match why.find(&named) {
        Some(at) => {
            let end = at + named.len();
            format!("{}, {said}: \"{reason}\"{}", &why[..end], &why[end..])
        }
        None => format!(
            "{}; {} {state} it, {said}: \"{reason}\"",
            why.trim_end_matches('.'),
            crate::text::visible_inline(by)
        ),
    }
}

/// Every pending entry, oldest claim first. Unlike the audit (which matches the Node
/// CLI), one whose claim time cannot be read is listed too, last: it is still a send
/// whose fate is unknown.
/// The header's counts. The pending rows that cannot be read (each may be an unknown
/// send the Unknown view cannot list, so the header names how many) come with the
/// Unknown view's load, from the same read of the pending rows.
pub(super) async fn counts(store: &Arc<dyn Store>) -> Result<crate::ledger::Census, String> {
    store.counts().await.map_err(|e| e.to_string())
}

/// The pending entries, oldest claim first, and the pending rows that cannot be read.
pub(super) async fn unknown_sends(
    store: &Arc<dyn Store>,
) -> Result<(Vec<crate::ledger::Entry>, Vec<crate::ledger::UnreadableRow>), String> {
    let (mut pending, unreadable) = store.pending().await.map_err(|e| e.to_string())?;
    pending.sort_by_cached_key(|e| {
        crate::ledger::time::parse_date(e.claimed_at()).unwrap_or(i64::MAX)
    });
    Ok((pending, unreadable))
}

/// " (by dana at ...)" when an entry was settled by a person.
pub(super) fn resolution_by(entry: &crate::ledger::Entry) -> String {
    match entry.get("resolution") {
        Some(serde_json::Value::Object(r)) => format!(
            " (by {} at {})",
            r.get("by").and_then(|v| v.as_str()).unwrap_or("?"),
            r.get("at").and_then(|v| v.as_str()).unwrap_or("?")
        ),
        _ => String::new(),
    }
}
