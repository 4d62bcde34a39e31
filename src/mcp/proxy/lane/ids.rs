//! Which request ids are taken: a request under the id of one still waiting for its
//! answer, from the lane or from rmcp, is refused, since its answer would be taken for
//! the other's (hostile round, session 43: AI4).

use serde_json::Value;

use super::Lane;

impl Lane {
    /// Whether a request under the id `raw` (as the agent wrote it) still waits for
    /// its answer, from the lane or from rmcp: Some(true) when one rmcp was handed was
    /// cancelled (its work may go on), Some(false) when one waits.
    pub(super) fn id_in_use(&self, raw: &[u8]) -> Option<bool> {
        if self.lane_waits(raw) {
            return Some(false);
        }
        self.asked_of_rmcp.holds(std::str::from_utf8(raw).ok()?)
    }

    /// Whether a call the lane took (forwarded, or at the gate) under the id `raw` (as
    /// the agent wrote it, matched by its value) still waits for its answer. One the
    /// agent cancelled does not: whatever still comes for it is told apart by the
    /// lane's own number, and dropped.
    pub(super) fn lane_waits(&self, raw: &[u8]) -> bool {
        let Ok(id) = serde_json::from_slice::<Value>(raw) else {
            return false;
        };
        let forwarded = self.waiting.lock().is_ok_and(|waiting| {
            waiting
                .values()
                .filter_map(|w| w.to.agent_id())
                .any(|(written, value)| same_id((written, value), (raw, &id)))
        });
        forwarded || self.gate_waits(raw, &id)
    }
}

/// Whether two request ids (each as written, and its value) are one: written alike,
/// or the same string, or the same number. Numbers past 2^53 are told apart as
/// written unless they are the same integer: as doubles, two of them may read as one.
pub(super) fn same_id((a_written, a): (&[u8], &Value), (b_written, b): (&[u8], &Value)) -> bool {
    if a_written == b_written {
        return true;
    }
    match (a, b) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => {
            // Exact as a double below 2^53: `1.0` is `1`.
            let exact =
                |n: &serde_json::Number| n.as_f64().filter(|f| f.abs() < 9_007_199_254_740_992.0);
            (a.as_i64().is_some() && a.as_i64() == b.as_i64())
                || (a.as_u64().is_some() && a.as_u64() == b.as_u64())
                || exact(a).is_some_and(|a| exact(b) == Some(a))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_id;
    use serde_json::Value;

    fn same(a: &str, b: &str) -> bool {
        let value = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        same_id((a.as_bytes(), &value(a)), (b.as_bytes(), &value(b)))
    }

    #[test]
    fn an_id_is_one_however_it_is_written_and_large_numbers_are_told_apart() {
        assert!(same(r#""a""#, r#""\u0061""#));
        assert!(same("1", "1.0"));
        assert!(same("7", "7"));
        assert!(!same("7", r#""7""#));
        assert!(!same("1", "2"));
        // Equal as doubles, different integers.
        assert!(!same(
            "123456789012345678901234567890",
            "123456789012345678901234567891"
        ));
        assert!(!same("9007199254740993", "9007199254740992.0"));
    }
}
