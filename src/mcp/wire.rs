//! The lines an agent writes to an MCP server over stdio, as both of send-once's
//! servers read them before rmcp does: a line read with a bound on its length, whether
//! rmcp's server can read it, and the answer to one it cannot.
//!
//! rmcp drops what it cannot read without a word (a line that is not JSON, a number
//! past a double's range, a lone surrogate, a message nested deeper than serde reads)
//! or answers it with no id; an agent that sent it would wait for its answer until its
//! own timeout. JSON-RPC 2.0 says every request is answered, under a null id when its
//! id cannot be read.

use std::borrow::Cow;
use std::ops::Range;

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ErrorData};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line read, as rmcp bounds its own: a longer one is dropped (and read
/// to its end without being kept), so that a peer cannot make a server hold an
/// endless line in memory.
pub const LONGEST_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The longest line read from rmcp's own server or client inside send-once: an answer
/// there carries the agent's id and a result (the upstream's, in the proxy), each up
/// to [`LONGEST_LINE`], and encoded again it may be longer than either. Dropped, an
/// answer would leave the agent waiting for ever.
pub const LONGEST_FROM_RMCP: usize = 4 * LONGEST_LINE;

/// UTF-8's byte-order mark, which some writers put before a line: rmcp reads the line
/// after it as the line without it.
pub const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// What [`read_line`] read.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// A line, in the buffer, with its newline (or without, at the end).
    Line,
    /// A line longer than the bound, read to its end and dropped.
    TooLong,
    /// The end of the input, or an error reading it.
    End,
}

/// Reads one line into `line` (cleared first), never holding more than `longest` of
/// it: `read_until` could not be bounded, since it returns only at a newline.
pub async fn read_line(
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
        // Its newline counted, as the SDK behind counts it: a line it would drop is
        // never handed to it.
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

/// Whether `text` is written as a JSON object: serde reads a struct from an array too,
/// and JSON-RPC's messages (and `_meta`) are objects.
pub fn is_object(text: &[u8]) -> bool {
    text.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{')
}

/// Whether `line` holds nothing but spaces: no message, and nothing to answer.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Why `line` is not JSON at all, if it is not; a JSON value of any shape is (rmcp
/// answers one that is no message itself). Read without keeping anything: neither
/// nesting nor the UTF-8 of a text is looked at, which [`readable`] finds in a request
/// (and a notification is never answered).
pub fn not_json(line: &[u8]) -> Option<serde_json::Error> {
    serde_json::from_slice::<serde::de::IgnoredAny>(line).err()
}

/// The answer to a line that is no request [`request`] reads and that the SDK would
/// drop without a word: one that is not JSON, or JSON that is not UTF-8 where it names
/// the message (its id, its method, a member's name). Under the line's id when that
/// much can be read, else a null one; a notification is never answered, nor a blank
/// line.
pub fn unreadable_line(line: &[u8]) -> Option<Vec<u8>> {
    if is_blank(line) {
        return None;
    }
    if let Some(e) = not_json(line) {
        return Some(refusal(None, Unreadable::NotJson(e)));
    }
    if std::str::from_utf8(line).is_ok() {
        return member_twice(line);
    }
    // Read again with each byte that is not UTF-8 replaced, for its id when that much
    // was written right.
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    let text = String::from_utf8_lossy(line);
    let named = serde_json::from_str::<Named>(&text).ok();
    if named
        .as_ref()
        .is_some_and(|n| n.id.is_none() && n.method.is_some())
    {
        return None;
    }
    let id = named
        .as_ref()
        .and_then(|n| n.id)
        .filter(|id| request_id(id) && !id.get().contains(char::REPLACEMENT_CHARACTER));
    Some(refusal(
        id.map(|id| id.get().as_bytes()),
        Unreadable::NotUtf8,
    ))
}

/// The answer to a request that names a member twice (`"method"` twice): rmcp answers
/// it under a null id, which the agent cannot match to its request (hostile round 44:
/// AL7); here it is answered under its id, when that is written once and is a
/// request's. None for anything that is no request (a response, a notification).
fn member_twice(line: &[u8]) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Identified<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    let unread = serde_json::from_slice::<Asked>(line).err()?;
    // Read leniently (a member written twice is the last one), only to tell a request.
    let members =
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line).ok()?;
    if !members.contains_key("method") {
        return None;
    }
    let id = serde_json::from_slice::<Identified>(line).ok()?.id;
    request_id(id).then(|| refusal(Some(id.get().as_bytes()), Unreadable::Message(unread)))
}

/// A `tools/call` request's parameters, as a tool's handler takes them.
#[derive(Deserialize)]
pub struct Call {
    /// The call's name and arguments.
    pub params: CallToolRequestParams,
}

/// A request, read no further than its method and id.
#[derive(Deserialize)]
struct Asked<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    id: &'a RawValue,
}

/// A request in a line: its method, and where its id stands.
pub struct Request<'a> {
    /// Its method, as written (unescaped).
    pub method: Cow<'a, str>,
    /// Where its id stands in the line.
    pub id: Range<usize>,
}

impl Request<'_> {
    /// Whether it calls a tool.
    pub fn is_call(&self) -> bool {
        self.method == "tools/call"
    }
}

/// The request `line` is; `None` if it is no request, or its id could not be
/// answered to.
pub fn request(line: &[u8]) -> Option<Request<'_>> {
    if !is_object(line) {
        return None;
    }
    let asked = serde_json::from_slice::<Asked>(line).ok()?;
    Some(Request {
        id: request_id_at(line, asked.id)?,
        method: asked.method,
    })
}

/// The answer to a request whose id `raw_id` (as the agent wrote it) is one a request
/// of this session still waits under, or one it cancelled (`cancelled`), whose work
/// may go on: the protocol forbids reusing an id in a session, and the SDK could give
/// the one request's answer to the other.
pub fn id_reused(raw_id: &[u8], cancelled: bool) -> Vec<u8> {
    let error = ErrorData::invalid_request(
        if cancelled {
            "this request's id was used by a request this session cancelled, whose work may still be going on: send-once refuses it, so that one answer is not taken for the other (the protocol forbids reusing an id in a session); nothing it asked was done"
        } else {
            "this request's id is used by another request of this session still waiting for its answer: send-once refuses it, so that one answer is not taken for the other (the protocol forbids reusing an id in a session); nothing it asked was done"
        },
        None,
    );
    let body = serde_json::to_vec(&error).unwrap_or_default();
    answer_line(raw_id, "error", &body)
}

/// The answer to a second `initialize`, under its id `raw_id` as the agent wrote it.
pub fn initialize_again(raw_id: &[u8]) -> Vec<u8> {
    let error = ErrorData::invalid_request(
        "this session has started already: send-once refuses a second initialize, which would rename the client mid-session; start a new session instead",
        None,
    );
    let body = serde_json::to_vec(&error).unwrap_or_default();
    answer_line(raw_id, "error", &body)
}

/// Where the request id `id` stands in `line`, if it is one a request may have.
pub fn request_id_at(line: &[u8], id: &RawValue) -> Option<Range<usize>> {
    request_id(id).then(|| span(line, id)).flatten()
}

/// Whether `id` is one JSON-RPC allows a request: a string or a number.
pub fn request_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// Where `part` stands in `line`, if it is a slice of it.
pub fn span(line: &[u8], part: &RawValue) -> Option<Range<usize>> {
    let start = (part.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(part.get().len())?;
    (end <= line.len()).then_some(start..end)
}

/// What rmcp's server could not read of a line.
pub enum Unreadable {
    /// The line is longer than [`LONGEST_LINE`].
    TooLong,
    /// The line is not JSON.
    NotJson(serde_json::Error),
    /// The line is JSON but not UTF-8 where it names the message (its id, its
    /// method, a member's name): JSON is UTF-8.
    NotUtf8,
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
pub fn readable(line: &[u8], call: bool) -> Result<(), Unreadable> {
    if call {
        serde_json::from_slice::<Call>(line).map_err(Unreadable::Params)?;
    }
    serde_json::from_slice::<ClientJsonRpcMessage>(line).map_err(Unreadable::Message)?;
    Ok(())
}

/// The answer to a line that could not be read as `unreadable` says, under the id
/// `raw_id` as the agent wrote it, or null when its id could not be read: for a call
/// whose parameters could not be read, that nothing was claimed or sent.
pub fn refusal(raw_id: Option<&[u8]>, unreadable: Unreadable) -> Vec<u8> {
    let seen = |e: serde_json::Error| crate::text::visible_inline(&e.to_string()).into_owned();
    let error = match unreadable {
        Unreadable::TooLong => ErrorData::invalid_request(
            format!(
                "send-once did not read a line longer than {} MiB with its newline (at most {} bytes before it), so nothing it asked was done",
                LONGEST_LINE >> 20,
                LONGEST_LINE - 1
            ),
            None,
        ),
        Unreadable::NotJson(e) => ErrorData::parse_error(
            format!(
                "send-once could not read a line as JSON, so nothing it asked was done: {}",
                seen(e)
            ),
            None,
        ),
        Unreadable::NotUtf8 => ErrorData::parse_error(
            "send-once could not read the request: it is not UTF-8, as JSON must be, so nothing it asked was done",
            None,
        ),
        Unreadable::Message(e) => ErrorData::invalid_request(
            format!("send-once could not read the request: {}", seen(e)),
            None,
        ),
        Unreadable::Params(e) => ErrorData::invalid_params(
            format!(
                "send-once could not read the call's parameters, so nothing was claimed or sent: {}",
                seen(e)
            ),
            None,
        ),
    };
    // An error that could not be encoded is not one of these: all are plain text.
    let body = serde_json::to_vec(&error).unwrap_or_default();
    answer_line(raw_id.unwrap_or(b"null"), "error", &body)
}

/// An error rmcp wrote with no id (to a request too broken to have one), with its id
/// written as null: JSON-RPC 2.0 says it is null there, and a client may look for it.
/// `None` if `line` is not a JSON object.
pub fn with_null_id(line: &[u8]) -> Option<Vec<u8>> {
    let mut message = serde_json::from_slice::<serde_json::Value>(line).ok()?;
    message
        .as_object_mut()?
        .insert("id".to_owned(), serde_json::Value::Null);
    let mut line = serde_json::to_vec(&message).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The agent's answer line to its request `raw_id` (its id as it wrote it), with
/// `body` as its `member` (`result` or `error`). The id is written back as the agent
/// wrote it: decoded and encoded again, a number past 2^53 would come back changed,
/// and the agent could not match its answer.
pub fn answer_line(raw_id: &[u8], member: &str, body: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(raw_id.len() + body.len() + 40);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(raw_id);
    line.extend_from_slice(b",\"");
    line.extend_from_slice(member.as_bytes());
    line.extend_from_slice(b"\":");
    line.extend_from_slice(body);
    line.extend_from_slice(b"}\n");
    line
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::BufReader;

    use super::*;

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

    /// AL7: a request naming its method twice was answered under a null id.
    #[test]
    fn a_request_that_names_a_member_twice_is_answered_under_its_id() {
        let answer = |line: &str| {
            unreadable_line(line.as_bytes()).map(|a| serde_json::from_slice::<Value>(&a).unwrap())
        };
        for (line, id) in [
            (
                r#"{"jsonrpc":"2.0","id":15,"method":"ping","method":"tools/list"}"#,
                json!(15),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"tools/list","method":"tools/list"}"#,
                json!("x"),
            ),
        ] {
            let said = answer(line).unwrap_or_else(|| panic!("no answer to {line}"));
            assert_eq!(said["id"], id, "{said}");
            assert_eq!(said["error"]["code"], -32600, "{said}");
            assert!(
                said["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("duplicate field `method`"),
                "{said}"
            );
        }
        // No request: a response, a notification, a request read as one.
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/x","method":"y"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        ] {
            assert_eq!(answer(line), None, "{line}");
        }
    }

    #[test]
    fn a_line_not_utf8_where_it_names_the_message_is_answered_under_its_id_if_readable() {
        let answer = |line: &[u8]| {
            unreadable_line(line).map(|a| serde_json::from_slice::<Value>(&a).unwrap())
        };
        for (line, id) in [
            (
                &b"{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"pi\xffng\"}"[..],
                json!(40),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"ping\",\"\xff\":1}",
                json!(41),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
                Value::Null,
            ),
        ] {
            let said = answer(line).expect("answered");
            assert_eq!(said["id"], id, "{said}");
            assert_eq!(said["error"]["code"], -32700, "{said}");
        }
        // A notification is not answered; UTF-8 that is a request is [`request`]'s.
        assert!(answer(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\xff\"}").is_none());
        assert!(answer(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        assert!(answer(b"  ").is_none());
    }

    #[test]
    fn a_line_not_json_or_too_long_is_answered_under_a_null_id_and_a_request_under_its_own() {
        for line in [&b"not json"[..], b"{\"jsonrpc\":\"2.0\",\"id\":6"] {
            assert!(
                not_json(line).is_some(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        // Any JSON value is JSON, however deep, and text that is not UTF-8 is not
        // looked at: those are `readable`'s to find, in a request.
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert!(not_json(deep.as_bytes()).is_none());
        let not_utf8 =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"s\":\"\xff\"}}";
        assert!(not_json(not_utf8).is_none());
        assert!(readable(not_utf8, false).is_err());
        assert!(readable(deep.as_bytes(), false).is_err());
        assert!(not_json(b"[1,2]").is_none());
        let answer = |line: Vec<u8>| serde_json::from_slice::<Value>(&line).unwrap();
        let parse = answer(refusal(None, Unreadable::NotJson(not_json(b"x").unwrap())));
        assert_eq!(parse["id"], Value::Null);
        assert_eq!(parse["error"]["code"], -32700);
        let long = answer(refusal(None, Unreadable::TooLong));
        assert_eq!(long["error"]["code"], -32600);
        assert!(
            long["error"]["message"]
                .as_str()
                .unwrap()
                .contains("16 MiB")
        );
        // The id comes back as the agent wrote it, past what a double holds.
        let line = br#"{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"name":5}}"#;
        let asked = request(line).unwrap();
        assert!(asked.is_call());
        let Err(unreadable) = readable(line, asked.is_call()) else {
            panic!("a tool's name that is not a text is not readable");
        };
        let refused = refusal(Some(&line[asked.id]), unreadable);
        assert!(
            refused.starts_with(
                br#"{"jsonrpc":"2.0","id":18446744073709551617,"error":{"code":-32602"#
            )
        );
        assert!(request(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).is_none());
        assert!(request(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
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
