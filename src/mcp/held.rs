//! The marks of a tool call the MCP proxy held for a person: the meta field that
//! names the proxy, and the refusal every other door gives such a draft. Below both
//! the proxy (which makes the marks) and the queue's MCP tools (which refuse them).

use serde_json::Value;

use crate::review::Draft;

/// The meta field that marks a draft as a call held by the proxy, naming it.
pub const HELD_BY: &str = "heldBy";

/// What a held draft's `heldBy` says.
pub const PROXY: &str = "send-once mcp proxy";

/// Why a draft the proxy held is not sent by another door (`send-once dispatch`,
/// `dispatch_draft`): its call goes to the proxy's upstream, and only the proxy makes
/// it, when the agent calls it again or asks the status tool; once it made it, that is
/// what is said. None for any other draft.
pub fn held_by_proxy(draft: &Draft) -> Option<String> {
    let meta = draft.meta.as_ref()?;
    let field = |name: &str| meta.get(name).and_then(Value::as_str);
    if field(HELD_BY) != Some(PROXY) {
        return None;
    }
    let call = format!(
        "draft {} is a tool call held by send-once mcp proxy (upstream {}, tool {})",
        draft.id,
        crate::text::visible_inline(field("upstream").unwrap_or("?")),
        crate::text::visible_inline(field("tool").unwrap_or("?"))
    );
    Some(match &draft.ledger_sent {
        Some(sent) => format!(
            "{call}; the proxy made it{}{}. It is not made again",
            sent.sent_at
                .as_deref()
                .map(|at| format!(" at {}", crate::text::visible_inline(at)))
                .unwrap_or_default(),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", crate::text::visible_inline(id)))
                .unwrap_or_default(),
        ),
        None => format!(
            "{call}; only the proxy makes it, when the agent calls it again or asks its status tool. Nothing was sent"
        ),
    })
}

/// A meta field's name as a person reads it in a row or a detail, or None for one that
/// is not for people. The call a proxy's key was made from (`call`) says so: a
/// reviewer's edit may have changed the arguments since, and those are what is sent.
/// The fields that say which arguments a held call's recipient and intent are read
/// from are the queue's own.
fn meta_label(field: &str) -> Option<&str> {
    match field {
        "call" => Some("key made from call"),
        // Which arguments a held call's rows read from, and a hash that tells a
        // repeat's arguments from the call's: no one reads them.
        crate::review::meta::TO_ARGUMENT
        | crate::review::meta::INTENT_ARGUMENTS
        | super::call_key::WHOLE_ARGUMENTS => None,
        other => Some(other),
    }
}

/// A meta's fields as a person reads them in a row or a detail: each under its label
/// ([`meta_label`]), those not for people left out.
pub fn shown_meta(meta: &serde_json::Map<String, Value>) -> impl Iterator<Item = (&str, &Value)> {
    meta.iter()
        .filter_map(|(field, value)| Some((meta_label(field)?, value)))
}
