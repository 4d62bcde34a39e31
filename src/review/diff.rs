//! What changed in a payload between two revisions: a line diff of pretty canonical
//! JSON (keys sorted at every level, two-space indent), so that reordered keys are no
//! change and a changed field is one line.

use serde::Serialize;
use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};

use crate::ledger::{canonical, jsjson};

/// What a diff line is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineTag {
    /// In both revisions.
    Equal,
    /// Only in the newer one.
    Insert,
    /// Only in the older one.
    Delete,
}

/// One line of a diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    /// Whether it was kept, added or removed.
    pub tag: LineTag,
    /// The line, without its newline. Payload text: make it visible before drawing.
    pub text: String,
}

/// The diff from revision `from` to revision `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PayloadDiff {
    /// The older revision's number.
    pub from: i64,
    /// The newer revision's number.
    pub to: i64,
    /// Lines only the newer one has.
    pub added: usize,
    /// Lines only the older one has.
    pub removed: usize,
    /// Every line, equal ones included, in order.
    pub lines: Vec<DiffLine>,
}

impl PayloadDiff {
    /// True when the two payloads are the same canonical JSON.
    pub fn is_empty(&self) -> bool {
        self.added == 0 && self.removed == 0
    }

    /// "+2 -1", for a list's row.
    pub fn summary(&self) -> String {
        format!("+{} -{}", self.added, self.removed)
    }
}

/// A payload (JSON text) as pretty canonical JSON. Text that is not JSON (which the
/// queue never stores) is shown as it is.
pub fn pretty_canonical(payload: &str) -> String {
    match canonical::parse_json(payload) {
        Ok(value) => {
            let mut value = value.to_serde();
            sort_keys(&mut value);
            jsjson::stringify_pretty(&value)
        }
        Err(_) => payload.to_owned(),
    }
}

/// Sorts object keys as canonical JSON does: by UTF-16 code units, as JavaScript
/// sorts strings.
pub(crate) fn sort_keys(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            let mut sorted = Map::new();
            for (k, mut v) in entries {
                sort_keys(&mut v);
                sorted.insert(k, v);
            }
            *map = sorted;
        }
        _ => {}
    }
}

/// The line diff between two payloads (JSON texts).
pub fn payload_diff(from: i64, old: &str, to: i64, new: &str) -> PayloadDiff {
    let (old, new) = (pretty_canonical(old), pretty_canonical(new));
    let diff = TextDiff::from_lines(&old, &new);
    let mut lines = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        let tag = match change.tag() {
            ChangeTag::Equal => LineTag::Equal,
            ChangeTag::Insert => {
                added += 1;
                LineTag::Insert
            }
            ChangeTag::Delete => {
                removed += 1;
                LineTag::Delete
            }
        };
        lines.push(DiffLine {
            tag,
            text: change.value().trim_end_matches('\n').to_owned(),
        });
    }
    PayloadDiff {
        from,
        to,
        added,
        removed,
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordered_keys_are_no_change_and_a_changed_field_is_one_line_each_way() {
        let same = payload_diff(
            1,
            r#"{"b":1,"a":{"y":2,"x":1}}"#,
            2,
            r#"{"a":{"x":1,"y":2},"b":1}"#,
        );
        assert!(same.is_empty(), "{same:?}");
        let changed = payload_diff(
            1,
            r#"{"to":"a@x.co","body":"hi"}"#,
            2,
            r#"{"to":"b@x.co","body":"hi"}"#,
        );
        assert_eq!((changed.added, changed.removed), (1, 1));
        let delete = changed
            .lines
            .iter()
            .find(|l| l.tag == LineTag::Delete)
            .unwrap();
        let insert = changed
            .lines
            .iter()
            .find(|l| l.tag == LineTag::Insert)
            .unwrap();
        assert_eq!(delete.text, r#"  "to": "a@x.co""#);
        assert_eq!(insert.text, r#"  "to": "b@x.co""#);
        assert_eq!(changed.summary(), "+1 -1");
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+FF61 sorts before U+1F600 in UTF-16 (0xFF61 < 0xD83D is false: 0xD83D < 0xFF61).
        let text = pretty_canonical("{\"\u{ff61}\":1,\"\u{1f600}\":2,\"a\":3}");
        let a = text.find("\"a\"").unwrap();
        let emoji = text.find('\u{1f600}').unwrap();
        let halfwidth = text.find('\u{ff61}').unwrap();
        assert!(a < emoji && emoji < halfwidth, "{text}");
    }
}
