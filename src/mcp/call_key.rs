//! The key of a tool call through the proxy: what makes two calls "the same send".
//!
//! `sha256` of the canonical JSON (the Node library's canonical form) of
//! `["mcp", upstream, tool, arguments, window start or null]`, where the arguments
//! leave out the policy's `exclude`, all but its `key` when it names some, any that
//! are null (as if absent) and, when the tool's input schema forbids others, any it
//! does not declare; the recipient argument is normalised as `--to` is. Neither `_meta` nor a session or request id is in it, so a reconnect or
//! a restarted agent makes the same key. A look-alike spelling of the recipient or of
//! an intent argument is refused, never a second key.

use serde_json::{Map, Value};

use super::policy::ToolRule;
use crate::js::canonical::{canonical_json_of, sha256_hex};
use crate::ledger::key::{check_key_field, normalise_recipient};
use crate::review::meta::{INTENT_SEPARATOR, argument_text};

/// A call's key, and what it was made of.
#[derive(Clone, Debug, PartialEq)]
pub struct CallKey {
    /// The send key.
    pub key: String,
    /// The exact text hashed.
    pub preimage: String,
    /// The recipient, as the call gave it (for the rows a person reads).
    pub to: Option<String>,
    /// The intent arguments' values, joined (for the rows a person reads).
    pub intent: Option<String>,
    /// The start of the window the call falls in (ISO 8601 UTC), when the rule has one.
    pub window: Option<String>,
    /// When the key leaves out some of the call's arguments (the rule's `key` names
    /// fewer, or the tool's schema declares fewer), the hash of all of them but those
    /// `exclude` names and nulls, read as the key reads them: a repeat under the same
    /// key with other such arguments is the same call by its key, but not the call
    /// made, and is told so.
    pub whole: Option<String>,
}

/// The entry's (and a held call's draft's) meta field that keeps [`CallKey::whole`].
pub const WHOLE_ARGUMENTS: &str = "arguments";

/// A call's arguments as its key reads them, before the rule's `key` picks some: those
/// `exclude` names and nulls left out, the recipient normalised. Two calls whose
/// considered arguments are equal are one call, whatever the key picks of them.
pub fn considered(arguments: &Map<String, Value>, rule: &ToolRule) -> Map<String, Value> {
    arguments
        .iter()
        .filter(|(name, value)| !rule.exclude.contains(name) && !value.is_null())
        .map(|(name, value)| {
            let value = match (value, &rule.to) {
                (Value::String(to), Some(field)) if field == name => {
                    Value::String(normalise_recipient(to))
                }
                _ => value.clone(),
            };
            (name.clone(), value)
        })
        .collect()
}

/// The key of a call of `tool` on `upstream` with `arguments`, under `rule`, at
/// `now_ms` (milliseconds since the epoch; it only places the call in its window);
/// `declared` is what the tool's input schema declares, when it allows nothing else.
pub fn call_key(
    upstream: &str,
    tool: &str,
    arguments: &Map<String, Value>,
    rule: &ToolRule,
    now_ms: i64,
    declared: Option<&[String]>,
) -> Result<CallKey, String> {
    let all = considered(arguments, rule);
    let mut kept: Map<String, Value> = all
        .iter()
        .filter(|(name, _)| {
            (rule.key.is_empty() || rule.key.contains(name))
                && declared.is_none_or(|names| names.contains(name))
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let intent = intent_text(arguments, &rule.intent)?;
    let to = match &rule.to {
        None => None,
        Some(field) => match arguments.get(field) {
            Some(Value::String(to)) => {
                check_key_field("to", to)
                    .map_err(|e| format!("argument {}: {}", quoted(field), e.problem))?;
                kept.insert(field.clone(), Value::String(normalise_recipient(to)));
                Some(to.clone())
            }
            Some(other) => {
                return Err(format!(
                    "argument {} names the recipient, and must be a string, not {}",
                    quoted(field),
                    crate::js::jsjson::json_kind(other)
                ));
            }
            None => {
                return Err(format!(
                    "argument {} (the recipient) is missing",
                    quoted(field)
                ));
            }
        },
    };
    let window = rule.window.map(|window| {
        let width = i64::try_from(window.as_millis()).unwrap_or(i64::MAX).max(1);
        crate::js::time::iso_or_epoch(now_ms.div_euclid(width) * width)
    });
    let whole =
        (all.len() != kept.len()).then(|| sha256_hex(&canonical_json_of(&Value::Object(all))));
    let preimage = canonical_json_of(&Value::Array(vec![
        Value::from("mcp"),
        Value::from(upstream),
        Value::from(tool),
        Value::Object(kept),
        window.clone().map_or(Value::Null, Value::String),
    ]));
    Ok(CallKey {
        key: sha256_hex(&preimage),
        preimage,
        to,
        intent,
        window,
        whole,
    })
}

/// The intent arguments' values (a string as it is, anything else as its JSON),
/// joined with " · "; each string checked as `--intent` is.
fn intent_text(
    arguments: &Map<String, Value>,
    fields: &[String],
) -> Result<Option<String>, String> {
    let mut parts = Vec::new();
    for field in fields {
        let Some(value) = arguments.get(field) else {
            continue;
        };
        let text = argument_text(value);
        check_key_field("intent", &text)
            .map_err(|e| format!("argument {}: {}", quoted(field), e.problem))?;
        parts.push(text);
    }
    Ok((!parts.is_empty()).then(|| parts.join(INTENT_SEPARATOR)))
}

fn quoted(name: &str) -> String {
    format!("`{}`", crate::text::visible_inline(name))
}

/// The properties a tool's input schema declares, when it allows no others
/// (`additionalProperties: false`, and no `patternProperties`); None when it may take
/// more. A schema that does not forbid them may use them, so they stay in the key:
/// two calls that differ there may be two sends (list volatile ones in the policy's
/// `exclude`, or the ones that matter in its `key`).
pub fn declared_properties(schema: &Map<String, Value>) -> Option<Vec<String>> {
    let properties = schema.get("properties")?.as_object()?;
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false))
        && !schema.contains_key("patternProperties");
    closed.then(|| properties.keys().cloned().collect())
}

/// Whether `arguments` can be what the tool's input schema asks for: every required
/// property there, and each declared one of the JSON type it names. A call that
/// cannot is refused before it is claimed: the upstream would refuse it without
/// acting, and many answer that with `isError`, which would leave it unknown.
pub fn check_arguments(
    schema: &Map<String, Value>,
    arguments: &Map<String, Value>,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str()
            && arguments.get(name).is_none_or(Value::is_null)
        {
            return Err(format!("argument {} is required by the tool", quoted(name)));
        }
    }
    for (name, value) in arguments {
        let Some(wanted) = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
        else {
            continue;
        };
        let kinds: Vec<&str> = match wanted {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        let fits = |kind: &str| match kind {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            "null" => value.is_null(),
            _ => true,
        };
        if !kinds.iter().any(|k| fits(k)) {
            return Err(format!(
                "argument {} is {}, and the tool takes {}",
                quoted(name),
                crate::js::jsjson::json_kind(value),
                kinds.join(" or ")
            ));
        }
    }
    Ok(())
}
