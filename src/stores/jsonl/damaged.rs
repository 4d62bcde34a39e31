//! A damaged line that still names its key: read as an unknown send, never skipped.
//!
//! The Node library skips any line that is not an entry, and so would we: right for a
//! torn last line (a crash mid-write: the claim never completed, so nothing was sent),
//! wrong for a whole line with one bad byte (`"pendin\xc7"`). That line was a claim or
//! a settlement that did complete, and skipping it hides the key's last state: a
//! pending send looks never seen, and the next run sends it again.
//!
//! So a line that ends as an object ends (`}`), is not an entry because its bytes are
//! damaged (not UTF-8, or not JSON), and still names a key and a claim (a `key`
//! string, and a `status` or `claimedAt`), is read as that key's newest state: pending,
//! attempt unknown, its send's outcome uncertain. `audit` counts it unknown, `run` will
//! not send the key again, and a person's `resolve` settles it with a line of its own.
//! A torn line (it does not end with `}`) is still skipped, and so is a line that is
//! valid JSON but not an entry (a status that is not one): the Node library's recorded
//! output skips those, and ours matches it.

use serde_json::{Map, Value};

use crate::ledger::entry::{Entry, Status};

/// What a damaged line still says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Damaged {
    /// The key it names.
    pub key: String,
    /// Its claim time when readable, else the epoch (so that `audit` counts it as long
    /// unknown rather than in flight).
    pub claimed_at: String,
    /// Its attempt count when readable, else 1.
    pub attempts: u64,
}

const EPOCH: &str = "1970-01-01T00:00:00.000Z";

/// What `line` (the bytes of a line that is not an entry) still says of a claim, or
/// None: blank, torn, valid JSON, foreign, or naming no key and no claim.
pub(super) fn damaged(line: &[u8]) -> Option<Damaged> {
    let utf8 = std::str::from_utf8(line).is_ok();
    let text = String::from_utf8_lossy(line);
    let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if !trimmed.starts_with('{') || !trimmed.ends_with('}') {
        return None;
    }
    // Which claim fields it still names, whatever became of their values.
    let claim_names = ["\"status\"", "\"claimedAt\"", "\"attempts\""]
        .iter()
        .filter(|name| trimmed.contains(*name))
        .count();
    let (key, claimed_at, attempts) = match serde_json::from_str::<Map<String, Value>>(trimmed) {
        // Whole, valid JSON, and still not an entry: not damage but a line of
        // another kind, which Node skips too.
        Ok(_) if utf8 => return None,
        Ok(object) => (
            object.get("key").and_then(Value::as_str).map(str::to_owned),
            object
                .get("claimedAt")
                .and_then(Value::as_str)
                .map(str::to_owned),
            object.get("attempts").and_then(Value::as_u64),
        ),
        Err(_) => (
            string_member(trimmed, "key"),
            string_member(trimmed, "claimedAt"),
            number_member(trimmed, "attempts"),
        ),
    };
    // A readable key and one claim field, or with no readable key, two: a line that
    // was a claim, not foreign text that happens to hold `"status"`.
    if claim_names < if key.is_some() { 1 } else { 2 } {
        return None;
    }
    // A control character in a damaged key is the damage (a NUL written over a byte);
    // a key that cannot be read at all (its name or value damaged) is named after the
    // line, so that the claim is still counted and can be settled by a person.
    let key = key
        .map(|k| k.chars().filter(|c| !c.is_control()).collect::<String>())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| {
            let hash = crate::ledger::canonical::sha256_hex(&text);
            format!("damaged-line-{}", &hash[..16])
        });
    let claimed_at = claimed_at
        .filter(|at| crate::ledger::time::parse_date(at).is_some())
        .unwrap_or_else(|| EPOCH.to_owned());
    Some(Damaged {
        key,
        claimed_at,
        attempts: attempts.filter(|&n| n >= 1).unwrap_or(1),
    })
}

/// The entry a damaged line is read as: the same for the same bytes, so a person's
/// decision on it is a compare-and-set like any other.
pub(super) fn damaged_entry(line: &[u8]) -> Option<Entry> {
    let line = damaged(line)?;
    let mut fields = Map::new();
    fields.insert("key".into(), line.key.into());
    fields.insert("status".into(), Status::Pending.as_str().into());
    fields.insert("attempts".into(), line.attempts.into());
    fields.insert("claimedAt".into(), line.claimed_at.clone().into());
    fields.insert("updatedAt".into(), line.claimed_at.into());
    fields.insert("meta".into(), Value::Null);
    fields.insert(
        "error".into(),
        "its line in the ledger is damaged and cannot be read, so whether it was sent is unknown"
            .into(),
    );
    fields.insert("uncertain".into(), true.into());
    fields.insert("damaged".into(), true.into());
    Entry::from_value(Value::Object(fields)).ok()
}

/// The string value of the first member `name` in text that is not quite JSON.
fn string_member(text: &str, name: &str) -> Option<String> {
    let after = value_start(text, name)?;
    let inside = after.strip_prefix('"')?;
    let mut escaped = false;
    let end = inside.char_indices().find_map(|(i, c)| {
        if escaped {
            escaped = false;
            None
        } else if c == '\\' {
            escaped = true;
            None
        } else {
            (c == '"').then_some(i)
        }
    })?;
    let raw = &inside[..end];
    // Damage may have left a raw control character in it, which JSON refuses: read it
    // without that character rather than not at all.
    serde_json::from_str::<String>(&format!("\"{raw}\""))
        .ok()
        .or_else(|| {
            let kept: String = raw.chars().filter(|c| !c.is_control()).collect();
            serde_json::from_str::<String>(&format!("\"{kept}\"")).ok()
        })
}

fn number_member(text: &str, name: &str) -> Option<u64> {
    let after = value_start(text, name)?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Where the value of member `name` starts.
fn value_start<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let quoted = format!("\"{name}\"");
    let at = text.find(&quoted)? + quoted.len();
    let rest = text[at..].trim_start();
    Some(rest.strip_prefix(':')?.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_line_that_names_a_claim_is_read_as_an_unknown_send() {
        let mut bad_status = br#"{"key":"k-1","status":"pendin"#.to_vec();
        bad_status.push(0xc7);
        bad_status.extend_from_slice(br#"","attempts":2,"claimedAt":"2026-12-01T00:00:00.000Z","updatedAt":"2026-12-01T00:00:00.000Z","meta":null}"#);
        let entry = damaged_entry(&bad_status).expect("damaged");
        assert_eq!(entry.key(), "k-1");
        assert_eq!(entry.status(), Status::Pending);
        assert_eq!(entry.attempts(), 2);
        assert_eq!(entry.claimed_at(), "2026-12-01T00:00:00.000Z");
        assert!(entry.uncertain() && entry.error().is_some());
        // Not JSON at all (a lost quote), but whole: the key is still read.
        let broken = br#"{"key":"k-2","status:"pending","claimedAt":"2026-12-01T00:00:00.000Z"}"#;
        assert_eq!(damaged(broken).map(|d| d.key), Some("k-2".to_owned()));
        // The same bytes, the same entry.
        assert_eq!(damaged_entry(&bad_status), damaged_entry(&bad_status));
        // A damaged key's name, or a NUL in its value: still counted, under the key
        // as far as it can be read, or under a name of the line's own.
        let mut name = br#"{"k"#.to_vec();
        name.push(0xff);
        name.extend_from_slice(
            br#"y":"kk","status":"pending","attempts":1,"claimedAt":"2026-12-01T00:00:00.000Z"}"#,
        );
        let unnamed = damaged(&name).expect("a claim whose key cannot be read");
        assert!(unnamed.key.starts_with("damaged-line-"), "{unnamed:?}");
        let nul = b"{\"key\":\"kk\0\",\"status\":\"pending\",\"attempts\":1,\"claimedAt\":\"2026-12-01T00:00:00.000Z\"}";
        assert_eq!(damaged(nul).map(|d| d.key), Some("kk".to_owned()));
        let colon = br#"{"key";"kk","status":"pending","attempts":1,"claimedAt":"2026-12-01T00:00:00.000Z"}"#;
        assert!(damaged(colon).is_some_and(|d| d.key.starts_with("damaged-line-")));
    }

    #[test]
    fn a_torn_foreign_or_valid_json_line_is_not_a_damaged_claim() {
        for line in [
            r#"{"key":"t-torn","status":"pend"#,
            r#"{"note":"hello"}"#,
            r#"{"key":"k","hello":1}"#,
            r#"{"key":"bad-status","status":"done","claimedAt":"2026-09-27T00:00:00.000Z"}"#,
            r#"{"key":"no-claimed-at","status":"pending"}"#,
            r#"["key","status"]"#,
            "",
            "not json",
        ] {
            assert_eq!(damaged(line.as_bytes()), None, "{line}");
        }
        let no_time = damaged(br#"{"key":"k","status":"??","attempts":1,}"#).unwrap();
        assert_eq!((no_time.claimed_at.as_str(), no_time.attempts), (EPOCH, 1));
    }
}
