//! Who an agent is, as send-once's MCP servers name the submitter of what it proposes:
//! the operator's `--by`, else the name its client gave when the session started.
//!
//! Under protocol versions before 2026-07-28 the name is the one given in `initialize`:
//! the SDK would let a request's `_meta` name another client, so that one session could
//! submit as anyone, one request at a time. A session that starts without `initialize`
//! (2026-07-28) names its client in each request's `_meta`, as that version says.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// The submitter of what the agent behind `context` proposes: `by`, else its client's
/// name, refused when it names nobody a reviewer could tell apart ([`readable`]).
pub fn submitter(by: Option<&str>, context: &RequestContext<RoleServer>) -> Result<String, String> {
    if let Some(by) = by {
        return Ok(by.to_owned());
    }
    let name = match context.peer.peer_info() {
        Some(started) => Some(started.client_info.name.clone()),
        None => context.meta.client_info().map(|info| info.name),
    };
    readable(name)
}

/// A client's `name` when a reviewer could tell it apart; else why not (none or an
/// empty one, control characters, a comma, over 100 characters).
pub fn readable(name: Option<String>) -> Result<String, String> {
    let Some(name) = name.filter(|name| !name.trim().is_empty()) else {
        return Err(
            "the agent's MCP client gave no name, or an empty name, so nothing it proposes could say who proposed it; the operator gives one with --by"
                .to_owned(),
        );
    };
    if let Some(problem) = crate::review::quorum::name_problem(&name) {
        return Err(format!(
            "the agent's MCP client's name {} {problem}; the operator gives the agent a name with --by",
            crate::text::visible_inline(&name)
        ));
    }
    Ok(name)
}
