//! The `once` calls the lane takes: each is handed to the proxy's gate with the
//! parameters rmcp would have decoded, in a task of its own; the gate claims it and
//! forwards those parameters through the lane ([`Forward`]), and the lane writes
//! the gate's answer to the agent unless the agent cancelled the call.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, ErrorData, ServerResult};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::lines::{spliced_at, task_handle_alone};
use super::{Lane, Match, NoAnswer, OURS, Waiter, Waiting, answer_line, named};
use crate::mcp::proxy::upstream::{Forwarded, sorted};
use crate::mcp::wire::{Call, LONGEST_LINE, Unreadable};

/// A `tools/call` the lane took for the gate: its parameters, as rmcp would have
/// decoded them, and the way to forward them.
pub struct GatedCall {
    /// The call's parameters.
    pub params: CallToolRequestParams,
    /// Forwards the parameters, encoded again, under an id of the lane's.
    pub forward: Forward,
}

/// What the gate answers a call: the result as the agent's session expects it, or
/// a JSON-RPC error.
pub type GateAnswer = Result<ServerResult, ErrorData>;

/// The proxy's gate for the calls the lane routes to it.
pub type Gate = Box<dyn Fn(GatedCall) -> BoxFuture<'static, GateAnswer> + Send + Sync>;

/// A call handed to the gate and not yet answered.
pub(super) struct Gated {
    /// The agent's id.
    pub(super) id: Value,
    /// The agent's id, as it wrote it.
    pub(super) raw_id: Box<[u8]>,
    /// The call's length: its answer will take about as much room.
    pub(super) size: usize,
    /// Whether the agent cancelled it: it goes on (and counts against the lane's
    /// room until it ends), but its answer is not written, nor its progress.
    cancelled: bool,
    /// The agent's progress token, as rmcp writes it: the call goes upstream with one
    /// of the lane's, and the lane relays its progress under the agent's.
    progress: Option<Box<[u8]>>,
}

impl Lane {
    /// Hands a `once` call to the gate, in a task of its own: an agent that gives up
    /// (a client's timeout, a cancellation) does not stop the call, whose answer is
    /// still recorded. False if the line is not a call the gate can take: rmcp
    /// answers it as before.
    pub(super) fn to_gate(self: &Arc<Self>, line: &[u8], raw_id: &RawValue) -> bool {
        let Some(gate) = self.gate.get() else {
            return false;
        };
        let Ok(id) = serde_json::from_str::<Value>(raw_id.get()) else {
            return false;
        };
        let params = match serde_json::from_slice::<Call>(line) {
            Ok(Call { params }) => params,
            // JSON, but not parameters this build can read (a number past a double's
            // range, a lone surrogate, an argument list that is not an object): rmcp
            // could not read them either, and would leave the call unanswered.
            Err(e) => {
                self.refuse_unreadable(Some(raw_id.get().as_bytes()), Unreadable::Params(e));
                return true;
            }
        };
        // A request that carries its own lifecycle (a protocol version in its
        // `_meta`, MCP 2026-07-28's) is rmcp's to check.
        if params.meta.as_ref().is_some_and(|meta| {
            meta.0
                .0
                .keys()
                .any(|k| k.starts_with("io.modelcontextprotocol/"))
        }) {
            return false;
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let mut params = params;
        // Whatever the agent's token is (a number past 64 bits, an object): it does
        // not go upstream, where it could be taken for another call's.
        let progress = params.meta.as_mut().and_then(|meta| {
            let fields = &mut meta.0.0;
            let theirs = fields.remove("progressToken")?;
            let ours = Value::String(super::progress_token(number));
            fields.insert("progressToken".to_owned(), ours);
            serde_json::to_vec(&theirs).ok().map(Vec::into_boxed_slice)
        });
        let Some(forward) = Forward::of(Arc::clone(self), &params) else {
            return false;
        };
        // Encoded again, numbers written short can grow (`1e15` is sixteen digits):
        // past what an MCP server reads in a line, it would be dropped unread, and the
        // call left unknown. Refused before it is claimed instead.
        if forward.line.len() + OURS.len() + 24 > LONGEST_LINE {
            self.answer(
                raw_id.get().as_bytes(),
                format!(
                    "send-once refused the call, and it was not forwarded: encoded as it was keyed, it is {} bytes, longer than the {} a line to an MCP server may be",
                    forward.line.len(),
                    LONGEST_LINE
                ),
            );
            return true;
        }
        if let Ok(mut gated) = self.gated.lock() {
            gated.insert(
                number,
                Gated {
                    id,
                    raw_id: raw_id.get().as_bytes().into(),
                    size: line.len(),
                    cancelled: false,
                    progress,
                },
            );
        }
        let in_flight = self.in_flight.get().map(|f| f.start());
        let answering = gate(GatedCall { params, forward });
        let lane = Arc::clone(self);
        tokio::spawn(async move {
            let answer = answering.await;
            lane.answer_gated(number, &answer);
            // Counted until its answer is on its way: shutdown waits for both.
            drop(in_flight);
        });
        true
    }

    /// Gives the gate's answer to the call `number` to the agent, unless the agent
    /// cancelled it or the proxy answered it already when stopping.
    pub(super) fn answer_gated(&self, number: u64, answer: &GateAnswer) {
        let call = self
            .gated
            .lock()
            .ok()
            .and_then(|mut gated| gated.remove(&number));
        let written = match answer {
            Ok(result) => serde_json::to_vec(result).map(|body| ("result", body)),
            Err(error) => serde_json::to_vec(error).map(|body| ("error", body)),
        };
        if let (Some(call), Ok((member, body))) = (call.filter(|call| !call.cancelled), written) {
            self.to_agent.push(answer_line(&call.raw_id, member, &body));
        }
        self.answered.notify_waiters();
    }

    /// Whether a gated call under the agent's id (`raw` as written, `id` its value)
    /// still waits for its answer; one the agent cancelled does not.
    pub(super) fn gate_waits(&self, raw: &[u8], id: &Value) -> bool {
        self.gated.lock().is_ok_and(|gated| {
            gated
                .values()
                .filter(|call| !call.cancelled)
                .any(|call| super::ids::same_id((&call.raw_id[..], &call.id), (raw, id)))
        })
    }

    /// Marks the gated call that the agent's request `raw` (its id as written, `id`
    /// its value) names, matched `how`, as cancelled: its answer will not be written. Whether there
    /// was one.
    pub(super) fn forget_gated(&self, raw: &[u8], id: &Value, how: Match) -> bool {
        let Ok(mut gated) = self.gated.lock() else {
            return false;
        };
        let ids = gated
            .iter()
            .filter(|(_, call)| !call.cancelled)
            .map(|(number, call)| (*number, (&call.raw_id[..], &call.id)));
        let Some(number) = named(ids, raw, id, how) else {
            return false;
        };
        if let Some(call) = gated.get_mut(&number) {
            call.cancelled = true;
        }
        true
    }

    /// The agent's progress token for the gated call `number`, if the agent still
    /// waits for it.
    pub(super) fn gated_progress(&self, number: u64) -> Option<Box<[u8]>> {
        let gated = self.gated.lock().ok()?;
        let call = gated.get(&number).filter(|call| !call.cancelled)?;
        call.progress.clone()
    }

    /// Answers every gated call not yet answered with `why`.
    pub(super) fn answer_all_gated(&self, why: &str) {
        let left: Vec<Gated> = match self.gated.lock() {
            Ok(mut gated) => gated.drain().map(|(_, call)| call).collect(),
            Err(_) => Vec::new(),
        };
        for call in left.into_iter().filter(|call| !call.cancelled) {
            self.answer(&call.raw_id, why.to_owned());
        }
    }
}

/// The agent's call, forwarded by the lane under an id of its own, its answer
/// awaited by the gate ([`Forward::call`]).
pub struct Forward {
    lane: Arc<Lane>,
    /// The request, without its id.
    line: Vec<u8>,
    /// Where its id goes in it.
    id_at: Range<usize>,
    /// Its answer, should it come after the limit passed.
    late: std::sync::Mutex<Option<oneshot::Receiver<Vec<u8>>>>,
}

/// The answer to a call that outlived its limit, should the upstream give it.
pub struct LateAnswer(oneshot::Receiver<Vec<u8>>);

impl LateAnswer {
    /// What the upstream answered, if it does within `within` (and the proxy runs).
    pub async fn within(self, within: Duration) -> Option<Forwarded> {
        let line = tokio::time::timeout(within, self.0).await.ok()?.ok()?;
        Some(answered_with(&line))
    }
}

impl Forward {
    /// The call of `params`, to be forwarded by `lane`. The parameters the key was
    /// made of are what is sent, encoded again, not the agent's line: a line that
    /// names an argument twice is read here with the last, and could be read upstream
    /// with the first.
    fn of(lane: Arc<Lane>, params: &CallToolRequestParams) -> Option<Forward> {
        let params = serde_json::to_vec(params).ok()?;
        let mut line = Vec::with_capacity(params.len() + 80);
        line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"tools/call","params":"#);
        line.extend_from_slice(&params);
        line.extend_from_slice(br#","id":"#);
        let at = line.len();
        line.push(b'}');
        Some(Forward {
            lane,
            line,
            id_at: at..at,
            late: std::sync::Mutex::new(None),
        })
    }

    /// The answer to come, should the upstream give it late, once the call outlived
    /// its limit.
    pub fn late(&self) -> Option<LateAnswer> {
        self.late.lock().ok()?.take().map(LateAnswer)
    }

    /// Sends the call upstream and waits for its answer, at most `limit`: what came
    /// of it, as [`super::upstream::call`] tells it.
    pub async fn call(&self, limit: Duration) -> Forwarded {
        let lane = &self.lane;
        if lane.upstream_gone.load(Ordering::SeqCst) {
            return Forwarded::Gone;
        }
        let number = lane.next.fetch_add(1, Ordering::Relaxed);
        let message = spliced_at(
            &self.line,
            self.id_at.clone(),
            format!("\"{OURS}{number}\"").as_bytes(),
        );
        let (answer, answered) = oneshot::channel();
        let (late, late_answer) = oneshot::channel();
        if let Ok(mut waiting) = lane.waiting.lock() {
            waiting.insert(
                number,
                Waiting {
                    to: Waiter::Gate { answer, late },
                    _timer: lane.timer(number, limit),
                    _in_flight: None,
                    size: message.len(),
                    // Its progress is the gated call's, relayed while the agent waits.
                    progress: None,
                },
            );
        }
        // The upstream's output may have ended since the look above, its waiting
        // calls answered before this one was there: not sent, then.
        if lane.upstream_gone.load(Ordering::SeqCst) && lane.take_waiting(number).is_some() {
            return Forwarded::Gone;
        }
        if !lane.to_upstream.push(message) && lane.take_waiting(number).is_some() {
            return Forwarded::Gone;
        }
        match answered.await {
            Ok(Ok(line)) => answered_with(&line),
            Ok(Err(NoAnswer::TimedOut)) => {
                if let Ok(mut slot) = self.late.lock() {
                    *slot = Some(late_answer);
                }
                Forwarded::TimedOut
            }
            Ok(Err(NoAnswer::Lost(why))) => Forwarded::Lost(why),
            Err(_) => {
                Forwarded::Lost("the proxy stopped waiting for the upstream's answer".to_owned())
            }
        }
    }
}

/// What the upstream's answer `line` to a forwarded call says of it: read as rmcp's
/// client reads it (a task handle beside a result's members is a task).
fn answered_with(line: &[u8]) -> Forwarded {
    #[derive(Deserialize)]
    struct Answer<'a> {
        // Present even when null: `"result": null` beside an error is two answers.
        #[serde(default, borrow, deserialize_with = "present")]
        result: Option<&'a RawValue>,
        error: Option<ErrorData>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(
        member: D,
    ) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue>::deserialize(member).map(Some)
    }
    let line = task_handle_alone(line).map_or(Cow::Borrowed(line), Cow::Owned);
    match serde_json::from_slice::<Answer>(&line) {
        // Which of the two is the upstream's word is not known: the tool may have run.
        Ok(Answer {
            error: Some(_),
            result: Some(_),
        }) => Forwarded::Lost(
            "the upstream answered with both a result and an error, which does not say whether the tool acted".to_owned(),
        ),
        Ok(Answer {
            error: Some(error), ..
        }) => sorted(Err(rmcp::service::ServiceError::McpError(error))),
        Ok(Answer {
            result: Some(result),
            ..
        }) => match serde_json::from_str::<ServerResult>(result.get()) {
            Ok(result) => sorted(Ok(result)),
            Err(_) => Forwarded::Lost(
                "the upstream answered tools/call with something else than a result".to_owned(),
            ),
        },
        _ => Forwarded::Lost(
            "the upstream's answer to the call was neither a result nor an error".to_owned(),
        ),
    }
}
