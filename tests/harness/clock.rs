//! The fixed clock of the screen's tests: one moment, and times before it, so what a
//! view draws ("claimed 40m ago") is the same on every run.

use send_once::ledger::time;

pub const NOW: &str = "2026-09-27T12:00:00.000Z";
pub const MIN: i64 = 60_000;

/// [`NOW`] in milliseconds.
pub fn now() -> i64 {
    time::parse_date(NOW).unwrap()
}

/// The time `ms` before [`NOW`], as entries write it.
pub fn ago(ms: i64) -> String {
    time::iso_from_millis(now() - ms).unwrap()
}
