//! A draft or an entry as plain text for a pager (`o`): what the detail pane shows, whole,
//! every line made visible. Below the drawing, so the state can hand it to the runtime.

use serde_json::Value;

use crate::ledger::{Entry, jsjson};
use crate::review::{Draft, render};

/// A value as a person reads it: a string as itself, anything else as JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => jsjson::stringify(other),
    }
}

/// The draft as plain text for a pager: its payload, or its diff against the base
/// shown, every line made visible.
pub fn draft_text(draft: &Draft, base: Option<i64>) -> String {
    let mut heading = format!(
        "Draft {} · revision {} · {}\nkey {}",
        draft.id,
        draft.revision,
        draft.state_text(),
        draft.key
    );
    if let Some(meta) = &draft.meta {
        for (k, v) in crate::mcp::held::shown_meta(meta) {
            heading.push_str(&format!("\n{k}: {}", value_text(v)));
        }
    }
    match (draft.current(), base.and_then(|b| draft.revision_of(b))) {
        (Some(current), Some(base)) => {
            let diff = render::reviewer_diff(
                base.revision,
                &base.payload,
                current.revision,
                &current.payload,
            );
            format!(
                "{}\n\n{}",
                crate::text::visible(&heading),
                render::plain_diff(&diff)
            )
        }
        (Some(current), None) => render::plain_payload(&heading, &current.payload),
        (None, _) => format!(
            "{}\n\n(the payload is not loaded)\n",
            crate::text::visible(&heading)
        ),
    }
}

/// The entry as plain text for a pager: its JSON, pretty, every line made visible.
pub fn entry_text(entry: &Entry) -> String {
    let json = crate::ledger::jsjson::stringify_pretty(&entry.to_value());
    crate::text::visible(&json).into_owned()
}
