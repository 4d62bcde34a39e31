//! The person's records (`resolution`, `reset`) every line of the file holds, for
//! `decisions verify` to find each one's decision ([`crate::ledger::chain::PersonRecord`]).
//!
//! Every line, not only each key's last: a record replaced since (a failed entry later
//! resolved sent) had its decision too. Only lines that spell either field are parsed.

use serde_json::Value;

use super::Files;
use super::line::{decode, for_each_line, parse_entry};
use crate::ledger::StoreError;
use crate::ledger::chain::PersonRecord;

impl Files {
    pub(super) fn person_records(&self) -> Result<Vec<PersonRecord>, StoreError> {
        self.one_name()?;
        let Some(file) = self.open_for_reading()? else {
            return Ok(Vec::new());
        };
        let resolution = memchr::memmem::Finder::new(b"\"resolution\"");
        let reset = memchr::memmem::Finder::new(b"\"reset\"");
        let mut records = Vec::new();
        for_each_line(file, |_, bytes| {
            if resolution.find(bytes).is_none() && reset.find(bytes).is_none() {
                return;
            }
            let Some(entry) = parse_entry(&decode(bytes)) else {
                return;
            };
            for kind in ["resolution", "reset"] {
                let Some(Value::Object(record)) = entry.get(kind) else {
                    continue;
                };
                let text = |name: &str| record.get(name).and_then(Value::as_str).map(str::to_owned);
                let Some(at) = text("at") else {
                    continue;
                };
                records.push(PersonRecord {
                    key: entry.key().to_owned(),
                    kind: kind.to_owned(),
                    at,
                    by: text("by"),
                    status: text("status"),
                });
            }
        })
        .map_err(|e| self.io_error(&self.path, e))?;
        records.dedup();
        Ok(records)
    }
}
