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

/// The most of a payload the detail pane lays out: it is drawn anew every frame, and
/// a payload of megabytes (nothing stops an agent submitting one) laid out and diffed
/// each time held the screen at full CPU (AC9). The pager shows all of it.
pub const PANE_PAYLOAD_BYTES: usize = 64 * 1024;

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
            let whole = render::plain_diff(&diff);
            // A change deep in a long revision is found first, with its place
            // (AJ4: the changes were at line 156,015 of 160,020, under one header).
            let changes = if whole.len() > PANE_PAYLOAD_BYTES {
                format!(
                    "What changed ({} lines since revision {}), with those around it:\n{}\nThe whole of it, every line marked:\n\n",
                    diff.summary(),
                    base.revision,
                    render::compact_diff(&diff, render::CONTEXT_LINES, render::LONGEST_LINE)
                )
            } else {
                String::new()
            };
            format!("{}\n\n{changes}{whole}", crate::text::visible(&heading),)
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
