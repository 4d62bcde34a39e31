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

use rmcp::model::NumberOrString;

/// Requests handed to rmcp's server, by their ids as rmcp writes them back.
#[derive(Default)]
pub struct AskedOfRmcp {
    /// The length of the requests waiting under each id, by the id's hash: an id may
    /// be as long as a line, and is not kept. rmcp answers an id once, however many
    /// requests the agent sent under it, so each id is one request here.
    ids: Mutex<HashMap<u64, usize>>,
    hasher: RandomState,
}

impl AskedOfRmcp {
    /// Counts the request whose id is `raw` (as the agent wrote it), `size` bytes long.
    pub fn asked(&self, raw: &str, size: usize) {
        if let (Some(id), Ok(mut ids)) = (self.key(raw), self.ids.lock()) {
            *ids.entry(id).or_default() += size;
        }
    }

    /// Counts the request under `raw` answered (by rmcp, whose answer has come out),
    /// or given up (cancelled by the agent, which rmcp does not answer); false if none
    /// waited under it.
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
        asked.asked("1", 10);
        asked.asked(r#""\u0061""#, 20);
        asked.asked(r#""a""#, 30);
        asked.asked("1", 5);
        assert_eq!(asked.waiting(), (2, 65));
        // A number and a string of the same digits are two ids.
        assert!(!asked.ended(r#""1""#));
        assert!(asked.ended("1.0"));
        assert!(!asked.ended("1"));
        assert!(asked.ended(r#""a""#));
        assert!(!asked.ended(r#""\u0061""#));
        assert_eq!(asked.waiting(), (0, 0));
    }
}
