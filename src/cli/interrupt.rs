//! SIGINT, SIGTERM and SIGHUP while a command sends: the work is dropped (so the check
//! or send command it was running is killed with its whole process group, not left
//! running unobserved), and the person is told what the ledger now holds.

use std::future::Future;

use send_once::ledger::{Entry, Ledger, LedgerLocation, Status};
use send_once::text::visible_inline;

use super::{Exit, fail};

/// A signal that stopped the work, by number.
pub struct Interrupted(pub i32);

/// Runs `work` to its end, unless SIGINT, SIGTERM or SIGHUP comes first.
pub async fn unless_signalled<F: Future>(work: F) -> Result<F::Output, Interrupted> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        // Without handlers the default dispositions stay: the process dies as before.
        return Ok(work.await);
    };
    tokio::select! {
        done = work => Ok(done),
        _ = interrupt.recv() => Err(Interrupted(libc::SIGINT)),
        _ = terminate.recv() => Err(Interrupted(libc::SIGTERM)),
        _ = hangup.recv() => Err(Interrupted(libc::SIGHUP)),
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    }
}

/// What to say and which exit code, from the entry before the work began and now.
pub async fn report(
    ledger: &Ledger,
    location: &LedgerLocation,
    key: &str,
    before: Option<Entry>,
    Interrupted(signal): Interrupted,
) -> Exit {
    let signal = name(signal);
    let shown = visible_inline(key);
    let now = ledger.get(key).await.ok().flatten();
    let unchanged = match (&before, &now) {
        (None, None) => true,
        (Some(b), Some(n)) => b.same_attempt(n) && b.status() == n.status(),
        _ => false,
    };
    if unchanged {
        return fail(
            Exit::Refused,
            format!(
                "interrupted by {signal}: nothing was claimed or sent for {shown}; a check command that was running was stopped"
            ),
        );
    }
    match now.as_ref().map(Entry::status) {
        Some(Status::Sent) => {
            super::note(format!(
                "interrupted by {signal}, after {shown} was recorded as sent"
            ));
            Exit::Ok
        }
        Some(Status::Failed) => fail(
            Exit::Failed,
            format!("interrupted by {signal}, after {shown} was recorded as failed"),
        ),
        _ => {
            // The attempt has ended, unanswered: say so in the entry, or every screen
            // reads it as still sending until --older-than has passed. Should the
            // write fail, it reads so until then; what to do is said below either way.
            // (Were the claim another process's, won while this one was stopped, its
            // record still lands: the change keeps the claim time and attempt.)
            let attempt = now.as_ref().map_or(1, Entry::attempts);
            if let Some(claimed) = now.as_ref().filter(|e| e.error().is_none()) {
                let why = format!(
                    "interrupted by {signal}: the send command was stopped with its process group"
                );
                let _ = ledger.record_stopped(claimed, &why).await;
            }
            fail(
                Exit::Unknown,
                format!(
                    "interrupted by {signal} while sending {shown}: the send command was stopped with its process group, and may or may not have reached the provider. It stays pending and will not be sent again on its own.\n\
                 Check with the provider, then record what happened:\n{}",
                    super::output::settle_commands(
                        &location.as_argument(),
                        key,
                        attempt,
                        now.as_ref().map(Entry::claimed_at),
                        ""
                    ),
                ),
            )
        }
    }
}
