//! Reading and rewriting the lines on the proxy's pipes: a line read with a bound on
//! its length, a message read no further than the lane needs, an id replaced where it
//! stands, and a task handle told from a final result.

use std::borrow::Cow;
use std::ops::Range;

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::OURS;

/// The longest line read, as rmcp bounds its own: a longer one is dropped (and read
/// to its end without being kept), so that a peer cannot make the proxy hold an
/// endless line in memory.
pub(super) const LONGEST_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

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

/// Whether `text` is written as a JSON object: serde reads a struct from an array too,
/// and JSON-RPC's messages (and `_meta`) are objects.
fn is_object(text: &[u8]) -> bool {
    text.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{')
}

/// A `tools/call` request's parameters, as a tool's handler takes them.
#[derive(Deserialize)]
pub(super) struct Call {
    pub(super) params: CallToolRequestParams,
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

/// A request, read no further than its method and id: what is left of a line that is
/// not a `Peek` (a tool's name that is not a string, say) to answer it by.
#[derive(Deserialize)]
struct Asked<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    id: &'a RawValue,
}

/// Where the id of the request `line` stands, and whether it is a tool call; `None`
/// if it is no request, or its id could not be answered to.
pub(super) fn asked(line: &[u8], peek: Option<&Peek<'_>>) -> Option<(bool, Range<usize>)> {
    let (method, id) = match peek {
        Some(peek) => (peek.method.as_deref()?, peek.id?),
        None => {
            if !is_object(line) {
                return None;
            }
            let asked = serde_json::from_slice::<Asked>(line).ok()?;
            return Some((asked.method == "tools/call", asked_id(line, asked.id)?));
        }
    };
    Some((method == "tools/call", asked_id(line, id)?))
}

fn asked_id(line: &[u8], id: &RawValue) -> Option<Range<usize>> {
    request_id(id).then(|| span(line, id)).flatten()
}

/// What rmcp's server could not read of a request.
pub(super) enum Unreadable {
    /// The message: not JSON-RPC 2.0, or a number or a text its types cannot hold.
    Message(serde_json::Error),
    /// A call's parameters, as a tool's handler takes them.
    Params(serde_json::Error),
}

/// Whether rmcp's server can read the request `line` as what it says it is: as a
/// client's message, and a call's parameters as a tool's handler takes them (rmcp
/// reads a call whose parameters its handler could not as a method it does not
/// know). What it cannot read it drops unanswered (a number past a double's range, a
/// lone surrogate), or answers with no id.
pub(super) fn readable(line: &[u8], call: bool) -> Result<(), Unreadable> {
    if call {
        serde_json::from_slice::<Call>(line).map_err(Unreadable::Params)?;
    }
    serde_json::from_slice::<ClientJsonRpcMessage>(line).map_err(Unreadable::Message)?;
    Ok(())
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

/// Where `part` stands in `line`, if it is a slice of it.
pub(super) fn span(line: &[u8], part: &RawValue) -> Option<Range<usize>> {
    let start = (part.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(part.get().len())?;
    (end <= line.len()).then_some(start..end)
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

/// Whether `id` is one JSON-RPC allows a request: a string or a number.
pub(super) fn request_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
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

/// What [`read_line`] read.
#[derive(Debug, PartialEq)]
pub(super) enum Read {
    /// A line, in the buffer, with its newline (or without, at the end).
    Line,
    /// A line longer than the bound, read to its end and dropped.
    TooLong,
    /// The end of the input, or an error reading it.
    End,
}

/// The longest line read from rmcp's own server or client inside the proxy: an answer
/// there carries the agent's id and the upstream's result, each up to
/// [`LONGEST_LINE`], and encoded again it may be longer than either. Dropped, an
/// answer would leave the agent waiting for ever.
pub(super) const LONGEST_FROM_RMCP: usize = 4 * LONGEST_LINE;

/// Reads one line into `line` (cleared first), never holding more than `longest` of
/// it: `read_until` could not be bounded, since it returns only at a newline.
pub(super) async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    longest: usize,
) -> Read {
    line.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf().await {
            Ok(available) => available,
            Err(_) => return Read::End,
        };
        if available.is_empty() {
            return match (too_long, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::End,
                (false, false) => Read::Line,
            };
        }
        let newline = memchr::memchr(b'\n', available);
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long && line.len() + take > longest {
            too_long = true;
            line.clear();
        }
        if !too_long {
            line.extend_from_slice(&available[..take]);
        }
        reader.consume(take);
        if newline.is_some() {
            return if too_long { Read::TooLong } else { Read::Line };
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::BufReader;

    use super::*;

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
    fn what_rmcp_reads_is_readable_and_what_it_cannot_is_not() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"no/such","params":{"x":1}}"#,
        ] {
            assert!(readable(line.as_bytes(), false).is_ok(), "{line}");
        }
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#;
        assert!(readable(call.as_bytes(), true).is_ok());
        for (line, call) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\ud800"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
                true,
            ),
        ] {
            assert!(readable(line.as_bytes(), call).is_err(), "{line}");
        }
        let not_two = r#"{"id":1,"method":"tools/call","params":{"name":"t"}}"#;
        assert!(matches!(
            readable(not_two.as_bytes(), true),
            Err(Unreadable::Message(_))
        ));
        // Parameters first: a call not JSON-RPC 2.0 whose arguments are not an object
        // is told its parameters could not be read.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":5}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":5}}"#,
        ] {
            assert!(
                matches!(readable(line.as_bytes(), true), Err(Unreadable::Params(_))),
                "{line}"
            );
        }
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

    async fn lines_of(input: Vec<u8>) -> Vec<(Read, Vec<u8>)> {
        let mut reader = BufReader::new(std::io::Cursor::new(input));
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let what = read_line(&mut reader, &mut line, LONGEST_LINE).await;
            if what == Read::End {
                return read;
            }
            read.push((what, line.clone()));
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

    #[tokio::test]
    async fn a_line_too_long_is_dropped_whole_and_the_next_one_read() {
        let mut input = vec![b'x'; LONGEST_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n{\"b\":2}");
        let read = lines_of(input).await;
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].0, Read::TooLong);
        assert!(read[0].1.is_empty(), "nothing of the long line is kept");
        assert_eq!(read[1], (Read::Line, b"{\"a\":1}\n".to_vec()));
        // The last line, without its newline, is a line all the same.
        assert_eq!(read[2], (Read::Line, b"{\"b\":2}".to_vec()));
    }

    #[tokio::test]
    async fn a_line_of_the_longest_length_is_kept() {
        let mut input = vec![b'y'; LONGEST_LINE - 1];
        input.push(b'\n');
        let read = lines_of(input).await;
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].0, Read::Line);
        assert_eq!(read[0].1.len(), LONGEST_LINE);
    }
}
