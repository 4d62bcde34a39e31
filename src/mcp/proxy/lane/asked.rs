//! The requests the lane handed to rmcp's server and that are not yet answered, by
//! their ids. rmcp reads every request it is given at once and starts a task for it,
//! however many wait: counted here until their answers come out, they take room as
//! the lane's own calls do, and an agent that floods the proxy with requests while
//! reading none of the answers is made to wait instead of filling the proxy's memory
//! (a count of requests only while rmcp's handler runs missed those whose answers
//! queued inside rmcp: thousands, 50 KB each in a debug build).

use std::collections::HashMap;
use std::sync::Mutex;

use super::lines::as_rmcp_writes;

/// Requests handed to rmcp's server, by their ids as rmcp writes them back.
#[derive(Default)]
pub(super) struct AskedOfRmcp {
    /// How many requests under each id wait (an agent may use an id twice).
    ids: Mutex<HashMap<String, usize>>,
}

impl AskedOfRmcp {
    /// Counts the request whose id is `raw` (as the agent wrote it).
    pub(super) fn asked(&self, raw: &str) {
        if let (Some(id), Ok(mut ids)) = (as_rmcp_writes(raw), self.ids.lock()) {
            *ids.entry(id).or_default() += 1;
        }
    }

    /// Counts one request under `raw` answered (by rmcp, whose answer has come out),
    /// or given up (cancelled by the agent, which rmcp does not answer); false if none
    /// waited under it.
    pub(super) fn ended(&self, raw: &str) -> bool {
        let (Some(id), Ok(mut ids)) = (as_rmcp_writes(raw), self.ids.lock()) else {
            return false;
        };
        match ids.get_mut(&id) {
            Some(1) => ids.remove(&id).is_some(),
            Some(n) => {
                *n -= 1;
                true
            }
            None => false,
        }
    }

    /// How many wait.
    pub(super) fn count(&self) -> usize {
        self.ids.lock().map(|ids| ids.values().sum()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_matched_as_rmcp_writes_it_back_and_counted_once_per_request() {
        let asked = AskedOfRmcp::default();
        asked.asked("1");
        asked.asked(r#""\u0061""#);
        asked.asked(r#""a""#);
        assert_eq!(asked.count(), 3);
        // A number and a string of the same digits are two ids.
        assert!(!asked.ended(r#""1""#));
        assert!(asked.ended("1"));
        assert!(!asked.ended("1"));
        assert!(asked.ended(r#""a""#));
        assert!(asked.ended(r#""\u0061""#));
        assert_eq!(asked.count(), 0);
    }
}
