//! Reading and rewriting the lines on the proxy's pipes: a message read no further
//! than the lane needs, an id replaced where it stands, and a task handle told from a
//! final result. (A line read with a bound, and what rmcp cannot read, are
//! [`crate::mcp::wire`]'s.)

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::OURS;
use crate::mcp::wire::{Request, is_object, request, request_id_at, span};

/// What a line is, read no further than the lane needs. The id is kept as the text
/// it is in the line, so that it can be replaced there without decoding the message
/// and encoding it again (a duplicate field makes the line not a `Peek`, so the id
/// found is the only one).
#[derive(Deserialize)]
pub(super) struct Peek<'a> {
    #[serde(borrow)]
    pub(super) jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) params: Option<PeekParams<'a>>,
    #[serde(borrow)]
    pub(super) error: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) result: Option<&'a RawValue>,
}

impl<'a> Peek<'a> {
    /// What `line` is, if it is a JSON object.
    pub(super) fn of(line: &'a [u8]) -> Option<Peek<'a>> {
        is_object(line).then(|| serde_json::from_slice(line).ok())?
    }
}

#[derive(Deserialize)]
pub(super) struct PeekParams<'a> {
    #[serde(borrow)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow)]
    pub(super) request_id: Option<&'a RawValue>,
    /// A progress notification's token.
    #[serde(rename = "progressToken", borrow)]
    pub(super) progress_token: Option<&'a RawValue>,
    /// A request's `_meta`, for its progress token ([`PeekParams::progress`]).
    #[serde(rename = "_meta", borrow)]
    pub(super) meta: Option<&'a RawValue>,
}

impl<'a> PeekParams<'a> {
    /// The request's progress token, if its `_meta` is an object that has one (serde
    /// would read a struct from an array too).
    pub(super) fn progress(&self) -> Option<&'a RawValue> {
        let meta = self.meta?;
        if !is_object(meta.get().as_bytes()) {
            return None;
        }
        serde_json::from_str::<PeekMeta<'a>>(meta.get())
            .ok()?
            .progress_token
    }
}

#[derive(Deserialize)]
pub(super) struct PeekMeta<'a> {
    #[serde(rename = "progressToken", borrow)]
    pub(super) progress_token: Option<&'a RawValue>,
}

/// The request `line` is (`peek`, when it could be read as one); `None` if it is no
/// request, or its id could not be answered to.
pub(super) fn asked<'a>(line: &'a [u8], peek: Option<&Peek<'a>>) -> Option<Request<'a>> {
    let Some(peek) = peek else {
        // What is left of a line that is not a `Peek` (a tool's name that is not a
        // string, say) to answer it by.
        return request(line);
    };
    Some(Request {
        method: peek.method.clone()?,
        id: request_id_at(line, peek.id?)?,
    })
}

/// `line` with `part` replaced by `with`, ending in a newline; `None` if `part` is not
/// a slice of `line` (serde_json borrows a raw value from the line it reads, so it is).
pub(super) fn spliced(line: &[u8], part: &RawValue, with: &[u8]) -> Option<Vec<u8>> {
    Some(spliced_at(line, span(line, part)?, with))
}

/// `line` with `part` replaced by `with` and, where given, `other` by `with_other`
/// (two places that do not overlap), ending in a newline.
pub(super) fn spliced_two(
    line: &[u8],
    (part, with): (&RawValue, &[u8]),
    other: Option<(&RawValue, &[u8])>,
) -> Option<Vec<u8>> {
    let Some((other, with_other)) = other else {
        return spliced(line, part, with);
    };
    let (first, second) = (span(line, part)?, span(line, other)?);
    let ((first, with_first), (second, with_second)) = if first.start <= second.start {
        ((first, with), (second, with_other))
    } else {
        ((second, with_other), (first, with))
    };
    if first.end > second.start {
        return None;
    }
    let mut out = Vec::with_capacity(line.len() + with_first.len() + with_second.len() + 1);
    out.extend_from_slice(&line[..first.start]);
    out.extend_from_slice(with_first);
    out.extend_from_slice(&line[first.end..second.start]);
    out.extend_from_slice(with_second);
    out.extend_from_slice(&line[second.end..]);
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    Some(out)
}

/// `line` with what stands at `at` replaced by `with`, ending in a newline.
pub(super) fn spliced_at(line: &[u8], at: Range<usize>, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len() + with.len() + 1);
    out.extend_from_slice(&line[..at.start]);
    out.extend_from_slice(with);
    out.extend_from_slice(&line[at.end..]);
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    out
}

/// The lane's number in `id`, if it is one of the lane's ids.
pub(super) fn lane_number(id: &RawValue) -> Option<u64> {
    let id: Cow<'_, str> = serde_json::from_str(id.get()).ok()?;
    id.strip_prefix(OURS)?.parse().ok()
}

/// An answer carrying a task handle (protocol version 2025-11-25's `task` member) as
/// well as a result's members, reduced to the handle; `None` for any other line.
/// rmcp's typed result has no `task` member: it would take such an answer for a final
/// result and drop the handle, and the proxy would keep a call still running as sent.
/// Reduced, it is what rmcp takes for a task, which the proxy does not follow and
/// leaves unknown.
pub(super) fn task_handle_alone(line: &[u8]) -> Option<Vec<u8>> {
    // Most answers do not name a task: they are not parsed again. The searcher is
    // built once: every answer to the agent passes here, `pass` calls' among them.
    static TASK: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"task\""));
    TASK.find(line)?;
    let mut message: Value = serde_json::from_slice(line).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    if !result.get("task").is_some_and(Value::is_object) || result.len() == 1 {
        return None;
    }
    result.retain(|name, _| name == "task" || name == "_meta");
    let mut reduced = serde_json::to_vec(&message).ok()?;
    reduced.push(b'\n');
    Some(reduced)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mcp::wire::request_id;

    #[test]
    fn two_places_are_replaced_in_either_order_and_overlapping_ones_refused() {
        let line = br#"{"id":7,"params":{"_meta":{"progressToken":"t"}}}"#;
        let peek = Peek::of(line).unwrap();
        let id = peek.id.unwrap();
        let token = peek.params.as_ref().unwrap().progress().unwrap();
        let both = spliced_two(line, (id, b"\"ours\""), Some((token, b"9"))).unwrap();
        assert_eq!(
            both,
            b"{\"id\":\"ours\",\"params\":{\"_meta\":{\"progressToken\":9}}}\n"
        );
        let reversed = spliced_two(line, (token, b"9"), Some((id, b"\"ours\""))).unwrap();
        assert_eq!(reversed, both);
        assert!(spliced_two(line, (id, b"1"), Some((id, b"2"))).is_none());
        // A `_meta` that is not an object has no token, whatever serde would read.
        let array = br#"{"id":7,"params":{"_meta":["t"]}}"#;
        assert!(
            Peek::of(array)
                .unwrap()
                .params
                .unwrap()
                .progress()
                .is_none()
        );
    }

    #[test]
    fn only_a_task_handle_beside_a_results_members_is_reduced_to_it() {
        let both = br#"{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t"},"content":[],"isError":false,"_meta":{"m":1}}}"#;
        let reduced: Value = serde_json::from_slice(&task_handle_alone(both).unwrap()).unwrap();
        assert_eq!(
            reduced,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"task": {"taskId": "t"}, "_meta": {"m": 1}}})
        );
        for untouched in [
            &br#"{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"task\": done"}]}}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{"task":"a word","content":[]}}"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"\"task\""}}"#,
        ] {
            assert_eq!(task_handle_alone(untouched), None);
        }
    }

    fn renamed(line: &str, with: &str) -> Option<String> {
        let peek: Peek = serde_json::from_str(line).ok()?;
        let id = peek.id?;
        request_id(id).then_some(())?;
        String::from_utf8(spliced(line.as_bytes(), id, with.as_bytes())?).ok()
    }

    #[test]
    fn only_the_top_level_id_is_renamed_wherever_it_stands() {
        assert_eq!(
            renamed(
                r#"{"params":{"id":7,"name":"x"},"id":7,"jsonrpc":"2.0","method":"tools/call"}"#,
                r#""send-once-pass-0""#
            )
            .unwrap(),
            "{\"params\":{\"id\":7,\"name\":\"x\"},\"id\":\"send-once-pass-0\",\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}\n"
        );
        // Spaces, an escaped string id, CRLF: the id's own text is what is replaced.
        assert_eq!(
            renamed(
                "{ \"id\" : \"a\\u0062\" , \"method\":\"tools/call\"}\r\n",
                "5"
            )
            .unwrap(),
            "{ \"id\" : 5 , \"method\":\"tools/call\"}\r\n"
        );
    }

    #[test]
    fn a_line_with_two_ids_or_an_id_a_request_cannot_have_is_not_renamed() {
        assert_eq!(
            renamed(r#"{"id":1,"id":2,"method":"tools/call"}"#, "9"),
            None
        );
        for id in ["null", "{}", "[1]", "true"] {
            assert_eq!(
                renamed(&format!(r#"{{"id":{id},"method":"m"}}"#), "9"),
                None,
                "{id}"
            );
        }
    }

    #[test]
    fn only_the_lanes_own_ids_are_taken_back() {
        let number = |id: &str| lane_number(&RawValue::from_string(id.to_owned()).unwrap());
        assert_eq!(number(r#""send-once-pass-12""#), Some(12));
        assert_eq!(number(r#""send-once-pass-\u0031""#), Some(1));
        assert_eq!(number("12"), None);
        assert_eq!(number(r#""send-once-pass-""#), None);
        assert_eq!(number(r#""other-1""#), None);
    }
}
