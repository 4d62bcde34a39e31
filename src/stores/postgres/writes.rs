//! Writes that survive a lost connection: a claim or a transition, its decision in the
//! same transaction, and when the answer is lost, a read back of what landed.

use super::{DecisionSql, Failure, PostgresStore, connection_gone, reason};
use crate::ledger::decision::{Decision, Link};
use crate::ledger::entry::{Entry, Status};
use crate::ledger::store::{Durability, StoreError, same_claim};
use deadpool_postgres::Object;
use std::hash::{Hash, Hasher};
use std::time::Duration;
use tokio_postgres::Transaction;
use tokio_postgres::types::ToSql;

/// The answer to one try, with the connection: a connection that went away, or did not
/// answer in time, is taken out of the pool so nothing else waits on it.
pub(super) fn settle<T>(
    client: Object,
    answer: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
    waited: Duration,
) -> Result<T, Failure> {
    match answer {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) if connection_gone(&e) => {
            drop(Object::take(client));
            Err(Failure::Lost(reason(&e)))
        }
        Ok(Err(e)) => Err(Failure::Refused(e)),
        Err(_) => {
            drop(Object::take(client));
            Err(Failure::Lost(format!(
                "the server gave no answer within {}s",
                waited.as_secs()
            )))
        }
    }
}

/// A claim's token, so a row read back after a lost answer is ours only if it really
/// is: 128 random bits drawn once per thread and counted up by one for each of the
/// thread's claims (distinct within the thread; another thread's or process's draw
/// overlaps it with a chance of about 2^-100), then the wall clock's nanoseconds, so
/// that two copies of one process (a restored snapshot, a cloned machine) part ways.
/// Drawing on every claim was a system call on every send's path. A forked child
/// draws again, or it would repeat its parent's tokens.
pub(super) fn claim_token() -> String {
    struct Source {
        forks: u64,
        last: u128,
    }
    thread_local! {
        static SOURCE: std::cell::Cell<Option<Source>> = const { std::cell::Cell::new(None) };
    }
    let forks = forks_seen();
    SOURCE.with(|cell| {
        let mut source = match cell.take() {
            Some(source) if source.forks == forks => source,
            _ => Source {
                forks,
                last: random_seed(),
            },
        };
        source.last = source.last.wrapping_add(1);
        let token = format!("{:032x}{:016x}", source.last, clock_nanos());
        cell.set(Some(source));
        token
    })
}

/// How many forks this process is removed from the one that first asked: a child
/// handler counts each fork, so a thread's draw is known stale in a child without a
/// system call (a pid would need one, and a pid can repeat in a new pid namespace).
fn forks_seen() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static FORKS: AtomicU64 = AtomicU64::new(0);
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    extern "C" fn counted() {
        // In the child, before anything else runs there: an atomic add is safe here.
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
    REGISTERED.call_once(|| {
        // SAFETY: registers a handler that only adds to an atomic, which is
        // async-signal-safe as a handler run after fork must be.
        let failed = unsafe { libc::pthread_atfork(None, None, Some(counted)) } != 0;
        if failed {
            // No handler: every token draws anew, as safe as before and slower.
            FORKS.store(u64::MAX, Ordering::Relaxed);
        }
    });
    match FORKS.load(Ordering::Relaxed) {
        u64::MAX => u64::from(std::process::id()) ^ clock_nanos(),
        forks => forks,
    }
}

fn clock_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

/// 128 bits from the system's randomness; without it (it does not fail on Linux),
/// what sets this thread apart: its process, thread, stack, boot and the time.
fn random_seed() -> u128 {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return u128::from_le_bytes(bytes);
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::process::id().hash(&mut hasher);
    std::thread::current().id().hash(&mut hasher);
    (&bytes as *const _ as usize).hash(&mut hasher);
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap_or_default()
        .hash(&mut hasher);
    clock_nanos().hash(&mut hasher);
    u128::from(hasher.finish()) << 64 | u128::from(clock_nanos())
}

/// Logs `decision` in `tx`, chained to the log's last decision (after a genesis when
/// the log ends in decisions without hashes), and gives back its hash: the one place a
/// decision's fields are bound, for the ledger's writes and the queue's. An advisory
/// lock held to the end of `tx` keeps any other appender from reading the same head.
pub(crate) async fn insert_decision_in(
    tx: &Transaction<'_>,
    sql: &DecisionSql,
    decision: &Decision,
) -> Result<String, tokio_postgres::Error> {
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&sql.lock])
        .await?;
    let last = tx.query_opt(&sql.last_chained, &[]).await?;
    let (after, hash): (i64, Option<String>) = match &last {
        Some(row) => (row.get(0), row.get(1)),
        None => (0, None),
    };
    let unchained = tx
        .query(&sql.after, &[&after])
        .await?
        .iter()
        .map(|row| {
            let outcome: String = row.get(6);
            let detail: String = row.get(7);
            Decision {
                id: Some(row.get(0)),
                at: row.get(1),
                by: row.get(2),
                action: row.get::<_, String>(3).into(),
                subject: row.get::<_, String>(4).into(),
                note: row.get(5),
                // A word this build cannot read still pins the decision as written.
                outcome: serde_json::from_value(serde_json::Value::String(outcome))
                    .unwrap_or(crate::ledger::DecisionOutcome::Refused),
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                link: None,
            }
        })
        .collect();
    let head = crate::ledger::chain::Head { hash, unchained };
    let wanted = head.ids_needed() as i32;
    let ids: Vec<i64> = tx
        .query(&sql.ids, &[&wanted])
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut hash = String::new();
    for logged in crate::ledger::chain::to_append(&head, decision, &ids) {
        let link = logged.link.clone().unwrap_or(Link {
            prev_hash: None,
            hash: String::new(),
        });
        let detail = logged.detail.to_string();
        tx.execute(
            &sql.insert,
            &[
                &logged.id,
                &logged.at,
                &logged.by,
                &logged.action.as_str(),
                &logged.subject.text().as_ref(),
                &logged.note,
                &logged.outcome.as_str(),
                &detail,
                &link.prev_hash,
                &link.hash,
            ],
        )
        .await?;
        hash = link.hash;
    }
    Ok(hash)
}

impl PostgresStore {
    /// The row for `key` as it is now, read on a new connection: its entry text and
    /// claim token.
    pub(super) async fn read_back(
        &self,
        key: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        let column = crate::ledger::lone::lossy(key);
        let rows = self
            .read_now(&self.sql.read_back, &[&column.as_ref()])
            .await?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }

    /// After a claim whose answer was lost: whether the row holds our token.
    pub(super) async fn claim_landed(
        &self,
        key: &str,
        token: &str,
        lost: &str,
    ) -> Result<Option<bool>, StoreError> {
        match self.read_back(key).await {
            Ok(Some((_, Some(found)))) if found == token => Ok(Some(true)),
            Ok(Some(_)) => Ok(Some(false)),
            // Not there: our statement was not applied, and trying again is safe.
            Ok(None) => Ok(None),
            Err(e) => Err(StoreError::ConnectionLost {
                ledger: self.ledger.clone(),
                reason: format!(
                    "{lost}; reading the claim back: {e}. Nothing was sent. The claim may have been made: then the key is pending and will not be sent on its own; look at it with send-once show once the server answers"
                ),
            }),
        }
    }

    /// After a transition whose answer was lost: whether the row holds what we wrote
    /// (for a new attempt, our token), or still what we replaced.
    pub(super) async fn transition_landed(
        &self,
        current_text: &str,
        next: &Entry,
        next_text: &str,
        token: Option<&str>,
        lost: &str,
    ) -> Result<Option<bool>, StoreError> {
        match self.read_back(next.key()).await {
            Ok(Some((text, found_token))) => {
                let ours = match token {
                    Some(token) => found_token.as_deref() == Some(token),
                    None => text == next_text,
                };
                if ours {
                    Ok(Some(true))
                } else if text == current_text {
                    Ok(None)
                } else {
                    Ok(Some(false))
                }
            }
            Ok(None) => Ok(Some(false)),
            Err(e) => Err(StoreError::ConnectionLost {
                ledger: self.ledger.clone(),
                reason: format!("{lost}; reading the entry back: {e}"),
            }),
        }
    }

    /// A claim, tried again once on a new connection when the first answer was lost and
    /// the row shows it was not applied.
    pub(super) async fn claim_with(
        &self,
        entry: &Entry,
        decision: Option<&Decision>,
    ) -> Result<bool, StoreError> {
        self.writable()?;
        self.reach().await?;
        let token = claim_token();
        let text = entry.to_json();
        let key = crate::ledger::lone::lossy(entry.key());
        let updated = entry.updated_at().unwrap_or(entry.claimed_at());
        let params: [&(dyn ToSql + Sync); 6] = [
            &key.as_ref(),
            &entry.status().as_str(),
            &text,
            &entry.claimed_at(),
            &updated,
            &token.as_str(),
        ];
        let mut lost = String::new();
        for _ in 0..2 {
            let attempt = self.try_changing(&self.sql.claim, &params, decision).await;
            match attempt {
                Ok(claimed) => return Ok(claimed),
                Err(Failure::Lost(reason)) => {
                    let landing = Box::pin(self.claim_landed(entry.key(), &token, &reason));
                    if let Some(landed) = landing.await? {
                        return Ok(landed);
                    }
                    lost = reason;
                }
                Err(failure) => return Err(self.failed(failure)),
            }
        }
        // Read back twice and not there: not ConnectionLost, whose words say the
        // outcome is unknown. It is known: nothing was claimed.
        Err(StoreError::Database {
            ledger: self.ledger.clone(),
            detail: format!(
                "the connection was lost twice before the claim was answered ({lost}); \
                 read back each time, the claim is not there, so nothing was claimed"
            ),
        })
    }

    /// One try at a claim or a transition (each answers a row when it changed
    /// something). With a decision, in one transaction that logs it and notifies the
    /// ledger's channel, only if the row changed.
    pub(super) async fn try_changing(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decision: Option<&Decision>,
    ) -> Result<bool, Failure> {
        match decision {
            None => self
                .try_query(sql, params)
                .await
                .map(|rows| !rows.is_empty()),
            // Boxed: a person's decision is rare, and its transaction's future is
            // several times a send's, which every send would otherwise carry.
            Some(decision) => Box::pin(self.try_deciding(sql, params, decision)).await,
        }
    }

    /// [`Self::try_changing`] with a decision: in one transaction that logs it and
    /// notifies the ledger's channel, only if the row changed.
    async fn try_deciding(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decision: &Decision,
    ) -> Result<bool, Failure> {
        let mut client = self.client().await.map_err(Failure::Store)?;
        let work = async {
            let tx = client.transaction().await?;
            let changed = !tx.query(sql, params).await?.is_empty();
            if changed {
                self.insert_decision(&tx, decision).await?;
                tx.batch_execute(&self.sql.notify).await?;
            }
            tx.commit().await?;
            Ok(changed)
        };
        let answer = tokio::time::timeout(self.answer_timeout(), work).await;
        settle(client, answer, self.answer_timeout())
    }

    pub(super) async fn insert_decision(
        &self,
        tx: &Transaction<'_>,
        decision: &Decision,
    ) -> Result<String, tokio_postgres::Error> {
        insert_decision_in(tx, &self.sql.decisions, decision).await
    }

    /// A compare-and-set on the stored entry's text; a transition into a new attempt
    /// carries a new claim token. Tried again once when the answer was lost and the row
    /// still holds what was to be replaced.
    pub(super) async fn transition_with(
        &self,
        current: &Entry,
        next: &Entry,
        durability: Durability,
        decision: Option<&Decision>,
    ) -> Result<bool, StoreError> {
        self.writable()?;
        self.reach().await?;
        let token = (next.status() == Status::Pending).then(claim_token);
        let next_text = next.to_json();
        let mut current_text = current.to_json();
        let mut lost = String::new();
        let mut tries = 0;
        while tries < 2 {
            tries += 1;
            match self
                .transition_once(
                    current.status().as_str(),
                    &current_text,
                    next,
                    &next_text,
                    token.as_deref(),
                    durability,
                    decision,
                )
                .await
            {
                Ok(true) => return Ok(true),
                Ok(false) => {
                    // The stored text may be the same claim written another way (by
                    // another tool, or before a field this build does not know was
                    // added): compare claims, as every store does, and then set on that
                    // exact text.
                    match Box::pin(self.read_back(next.key())).await? {
                        Some((stored, _))
                            if stored != current_text
                                && Entry::from_json(&stored)
                                    .is_ok_and(|e| same_claim(&e, current)) =>
                        {
                            current_text = stored;
                        }
                        _ => return Ok(false),
                    }
                }
                Err(Failure::Lost(reason)) => {
                    let landing = Box::pin(self.transition_landed(
                        &current_text,
                        next,
                        &next_text,
                        token.as_deref(),
                        &reason,
                    ));
                    if let Some(landed) = landing.await? {
                        return Ok(landed);
                    }
                    lost = reason;
                }
                Err(failure) => return Err(self.failed(failure)),
            }
        }
        if lost.is_empty() {
            return Ok(false);
        }
        Err(StoreError::Database {
            ledger: self.ledger.clone(),
            detail: format!(
                "the connection was lost twice before the change was answered ({lost}); \
                 read back each time, the entry still holds what it held, so it was not changed"
            ),
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn transition_once(
        &self,
        current_status: &str,
        current_text: &str,
        next: &Entry,
        next_text: &str,
        token: Option<&str>,
        durability: Durability,
        decision: Option<&Decision>,
    ) -> Result<bool, Failure> {
        let key = crate::ledger::lone::lossy(next.key());
        let updated = next.updated_at().unwrap_or(next.claimed_at());
        let params: [&(dyn ToSql + Sync); 8] = [
            &key.as_ref(),
            &current_status,
            &next.status().as_str(),
            &next_text,
            &next.claimed_at(),
            &updated,
            &current_text,
            &token,
        ];
        // A person's decision is never lazy: it commits durably with its log entry.
        let sql = match (decision, durability) {
            (None, Durability::Lazy) => &self.sql.transition_lazy,
            _ => &self.sql.transition,
        };
        self.try_changing(sql, &params, decision).await
    }
}

#[cfg(test)]
mod tests {
    use super::claim_token;
    use std::collections::HashSet;

    #[test]
    fn claim_tokens_differ_within_a_thread_and_across_threads() {
        let here: Vec<String> = (0..1000).map(|_| claim_token()).collect();
        let there: Vec<String> = std::thread::spawn(|| (0..1000).map(|_| claim_token()).collect())
            .join()
            .expect("the other thread");
        let all: HashSet<&String> = here.iter().chain(&there).collect();
        assert_eq!(all.len(), 2000, "every token is distinct");
        assert!(
            all.iter()
                .all(|t| t.len() == 48 && t.bytes().all(|b| b.is_ascii_hexdigit())),
            "{:?}",
            here.first()
        );
    }

    /// The counted part of a token, without the clock's.
    fn counted(token: &str) -> u128 {
        u128::from_str_radix(&token[..32], 16).expect("hex")
    }

    #[test]
    fn a_forked_child_does_not_count_on_from_its_parents_draw() {
        let before = claim_token();
        let mut fds = [0; 2];
        // SAFETY: a pipe into an array of two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child only makes a token (glibc's malloc is fork-safe), writes
        // it to the pipe and leaves with _exit, running nothing of the test harness.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork");
        if child == 0 {
            let token = claim_token();
            // SAFETY: writes the token's bytes to the pipe, then ends the child.
            unsafe {
                libc::write(fds[1], token.as_ptr().cast(), token.len());
                libc::_exit(0);
            }
        }
        let mut read = [0u8; 48];
        // SAFETY: reads at most 48 bytes into a buffer of 48; waits for the child.
        let got = unsafe {
            libc::close(fds[1]);
            let got = libc::read(fds[0], read.as_mut_ptr().cast(), read.len());
            libc::close(fds[0]);
            libc::waitpid(child, std::ptr::null_mut(), 0);
            got
        };
        assert_eq!(got, 48, "the child's token");
        let in_child = std::str::from_utf8(&read).expect("hex");
        let after = claim_token();
        assert_eq!(
            counted(&after),
            counted(&before) + 1,
            "the parent counts on"
        );
        assert_ne!(
            counted(in_child),
            counted(&before) + 1,
            "the child drew again rather than repeat the parent's next token"
        );
    }
}
