//! The requests handed to rmcp's server (by the proxy's lane, or `send-once mcp`'s
//! door) and not yet answered, by their ids. rmcp reads every request it is given at
//! once and starts a task for it, however many wait: counted here until their answers
//! come out, they take room as the lane's own calls do, and an agent that floods the
//! server with requests while reading none of the answers is made to wait instead of
//! filling its memory (a count of requests only while rmcp's handler runs missed those
//! whose answers queued inside rmcp: thousands, 50 KB each in a debug build).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::NumberOrString;

use super::wire::{Request, id_reused, initialize_again, readable, refusal};

/// Requests handed to rmcp's server, by their ids as rmcp writes them back.
#[derive(Default)]
pub struct AskedOfRmcp {
    /// The length of the requests waiting under each id, by the id's hash: an id may
    /// be as long as a line, and is not kept. rmcp answers an id once, however many
    /// requests the agent sent under it, so each id is one request here.
    ids: Mutex<HashMap<u64, usize>>,
    /// The ids of requests the agent cancelled, by hash: their work may go on inside
    /// rmcp, whose answer to one would be taken for the answer to a new request under
    /// the same id (and the new request's dropped). The protocol forbids reusing an
    /// id in a session; one reused is refused instead. Only cancelled ones are kept,
    /// so this grows with cancellations, not requests.
    cancelled: Mutex<std::collections::HashSet<u64>>,
    /// Whether the session's `initialize` came. The SDK takes a second one, which
    /// renames the client mid-session, and with it the submitter of all that follows.
    initialized: AtomicBool,
    hasher: RandomState,
}

/// Why a request's id cannot be handed to rmcp.
enum Reused {
    /// A request under it is still waiting for rmcp's answer.
    Waiting,
    /// A request under it was cancelled: its work may still be going on.
    Cancelled,
}

impl AskedOfRmcp {
    /// Lets the request `asked` (in `line`) through to rmcp, counted; or gives the
    /// answer that refuses it, under its id: rmcp could not read it, it is a second
    /// `initialize`, or its id is one rmcp could answer for another request.
    pub fn admit(&self, line: &[u8], asked: &Request<'_>) -> Result<(), Vec<u8>> {
        let id = &line[asked.id.clone()];
        readable(line, asked.is_call()).map_err(|unreadable| refusal(Some(id), unreadable))?;
        if asked.method == "initialize" && self.initialized.swap(true, Ordering::SeqCst) {
            return Err(initialize_again(id));
        }
        self.asked(std::str::from_utf8(id).unwrap_or_default(), line.len())
            .map_err(|reused| id_reused(id, matches!(reused, Reused::Cancelled)))
    }

    /// Counts the request whose id is `raw` (as the agent wrote it), `size` bytes long;
    /// refused, and not counted, when a request under that id still waits for its
    /// answer or was cancelled (rmcp could answer the one for the other).
    fn asked(&self, raw: &str, size: usize) -> Result<(), Reused> {
        let Some(id) = self.key(raw) else {
            return Ok(());
        };
        if self.cancelled.lock().is_ok_and(|c| c.contains(&id)) {
            return Err(Reused::Cancelled);
        }
        if let Ok(mut ids) = self.ids.lock() {
            if ids.contains_key(&id) {
                return Err(Reused::Waiting);
            }
            ids.insert(id, size);
        }
        Ok(())
    }

    /// Whether the id `raw` (as the agent wrote it) is one rmcp could answer for
    /// another request: Some(true) when a request under it was cancelled, Some(false)
    /// when one still waits. For requests the proxy's lane takes, which must not share
    /// an id with rmcp's either.
    pub fn holds(&self, raw: &str) -> Option<bool> {
        let id = self.key(raw)?;
        if self.cancelled.lock().is_ok_and(|c| c.contains(&id)) {
            return Some(true);
        }
        self.ids
            .lock()
            .is_ok_and(|ids| ids.contains_key(&id))
            .then_some(false)
    }

    /// Counts the request under `raw` given up by the agent (rmcp answers it no more),
    /// and keeps its id from being used again; false if none waited under it.
    pub fn cancelled(&self, raw: &str) -> bool {
        let Some(id) = self.key(raw) else {
            return false;
        };
        let waited = self
            .ids
            .lock()
            .is_ok_and(|mut ids| ids.remove(&id).is_some());
        if waited && let Ok(mut cancelled) = self.cancelled.lock() {
            cancelled.insert(id);
        }
        waited
    }

    /// Counts the request under `raw` answered (by rmcp, whose answer has come out);
    /// false if none waited under it.
    pub fn ended(&self, raw: &str) -> bool {
        let (Some(id), Ok(mut ids)) = (self.key(raw), self.ids.lock()) else {
            return false;
        };
        ids.remove(&id).is_some()
    }

    /// How many wait, and their length in all (their answers take about as much).
    pub fn waiting(&self) -> (usize, usize) {
        self.ids
            .lock()
            .map(|ids| (ids.len(), ids.values().sum()))
            .unwrap_or_default()
    }

    fn key(&self, raw: &str) -> Option<u64> {
        Some(self.hasher.hash_one(as_rmcp_writes(raw)?))
    }
}

/// An id as rmcp writes it back: read into its type and written again, so that the
/// agent's `1.0` or `"\u0061"` is matched to rmcp's `1` or `"a"`.
fn as_rmcp_writes(raw: &str) -> Option<String> {
    serde_json::to_string(&serde_json::from_str::<NumberOrString>(raw).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_matched_as_rmcp_writes_it_back_and_counted_once_however_often_used() {
        let asked = AskedOfRmcp::default();
        assert!(asked.asked("1", 10).is_ok());
        assert!(asked.asked(r#""\u0061""#, 20).is_ok());
        // The same id again, however written, while the first waits: refused.
        assert!(matches!(asked.asked(r#""a""#, 30), Err(Reused::Waiting)));
        assert!(matches!(asked.asked("1", 5), Err(Reused::Waiting)));
        assert_eq!(asked.waiting(), (2, 30));
        // A number and a string of the same digits are two ids.
        assert!(!asked.ended(r#""1""#));
        assert!(asked.ended("1.0"));
        assert!(!asked.ended("1"));
        assert!(asked.ended(r#""a""#));
        assert!(!asked.ended(r#""\u0061""#));
        assert_eq!(asked.waiting(), (0, 0));
        // Answered, an id may be used again; cancelled, it may not: its work may go on.
        assert!(asked.asked("1", 5).is_ok());
        assert!(asked.cancelled("1"));
        assert_eq!(asked.waiting(), (0, 0));
        assert!(matches!(asked.asked("1.0", 5), Err(Reused::Cancelled)));
        assert!(!asked.cancelled("7"), "nothing waited under it");
        assert!(asked.asked("7", 5).is_ok());
    }
}
