//! What a draft's meta says. People read a draft's recipient and intent, and an
//! unknown send's approver, from its meta: a meta that named another recipient than
//! the one its key is made from, or an approver, would show the reviewer a send that
//! is not the one they decide on, and whoever settles it a forged approval. Refused
//! at every door a draft comes in by (`draft submit`, the MCP `submit_draft`). A call
//! held by the MCP proxy reads its recipient and intent from its arguments, the
//! payload: its meta follows a reviewer's edit of them ([`following`]).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::quorum::normalise_channel;
use crate::text::visible_inline;

/// Meta fields send-once writes itself when a person approves: never an agent's.
const WRITTEN_ON_APPROVAL: [&str; 2] = ["approvedBy", "approvedAt"];

/// The meta field in which a call held by the MCP proxy names the argument that is
/// its recipient (the policy's `to`).
pub const TO_ARGUMENT: &str = "toArgument";

/// The meta field in which a held call names the arguments that make its intent (the
/// policy's `intent`, a list).
pub const INTENT_ARGUMENTS: &str = "intentArguments";

/// What joins a held call's intent arguments in the intent a person reads.
pub const INTENT_SEPARATOR: &str = " · ";

/// An argument as a person reads it in a row: a string as it is, anything else as
/// its canonical JSON.
pub fn argument_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(text) => Cow::Borrowed(text),
        other => Cow::Owned(crate::js::canonical::canonical_json_of(other)),
    }
}

/// The meta of a held call whose arguments are now `payload` (a reviewer's edit):
/// its `to` and `intent` read again from the arguments its meta names, as the proxy
/// read them when it held the call (without an intent argument there, the intent is
/// the tool's name). None when the meta names no argument (any other draft), or when
/// nothing it shows changed.
pub fn following(meta: &Map<String, Value>, payload: &Value) -> Option<Map<String, Value>> {
    let arguments = payload.as_object()?;
    let to = meta.get(TO_ARGUMENT).and_then(Value::as_str);
    let intent = meta.get(INTENT_ARGUMENTS).and_then(Value::as_array);
    if to.is_none() && intent.is_none() {
        return None;
    }
    let mut next = meta.clone();
    if let Some(field) = to {
        match arguments.get(field) {
            Some(value) => next.insert("to".into(), argument_text(value).into_owned().into()),
            None => next.remove("to"),
        };
    }
    if let Some(fields) = intent {
        let parts: Vec<Cow<'_, str>> = fields
            .iter()
            .filter_map(|field| arguments.get(field.as_str()?))
            .map(argument_text)
            .collect();
        let shown = if parts.is_empty() {
            meta.get("tool").cloned()
        } else {
            Some(parts.join(INTENT_SEPARATOR).into())
        };
        match shown {
            Some(shown) => next.insert("intent".into(), shown),
            None => next.remove("intent"),
        };
    }
    (next != *meta).then_some(next)
}

/// How the door names things in its messages: the meta (`--meta`, `meta`) and the
/// arguments the key is made from (`--to`, `to`).
#[derive(Clone, Copy)]
pub struct Door {
    /// The meta's name.
    pub meta: &'static str,
    /// What comes before an argument's name.
    pub argument: &'static str,
}

/// The longest meta a draft is submitted with, as JSON text, in bytes.
pub const MAX_META_BYTES: usize = 16 * 1024;

/// The most fields a draft's meta has.
pub const MAX_META_FIELDS: usize = 64;

/// Refuses a `meta` that names an approver, or a channel, recipient, intent or window
/// other than the `derived` ones the key was made from (the channel as the approval
/// policy compares it, the others as written).
pub fn check(
    meta: &Map<String, Value>,
    derived: &Map<String, Value>,
    door: Door,
) -> Result<(), String> {
    let Door {
        meta: said,
        argument,
    } = door;
    // Every screen that lists drafts or sends draws their meta (AI5, AI6: a meta of
    // megabytes held the review screen at full CPU); a payload is where bulk goes.
    let length = serde_json::to_string(meta).map_or(0, |text| text.len());
    if length > MAX_META_BYTES || meta.len() > MAX_META_FIELDS {
        return Err(format!(
            "{said} is {length} bytes in {} fields; it is at most {MAX_META_BYTES} bytes in {MAX_META_FIELDS} fields, a few words about the send for the people who review it (what is sent goes in the payload), nothing was queued",
            meta.len()
        ));
    }
    if let Some(field) = WRITTEN_ON_APPROVAL.iter().find(|f| meta.contains_key(**f)) {
        return Err(format!(
            "{said}'s {field} is written by send-once when a person approves; leave it out, nothing was queued"
        ));
    }
    if let Some(field) = [TO_ARGUMENT, INTENT_ARGUMENTS]
        .iter()
        .find(|f| meta.contains_key(**f))
    {
        return Err(format!(
            "{said}'s {field} is written by send-once mcp proxy for the calls it holds; leave it out, nothing was queued"
        ));
    }
    for (field, made) in derived {
        let Some(claimed) = meta.get(field) else {
            continue;
        };
        let same = match (field.as_str(), claimed.as_str(), made.as_str()) {
            ("channel", Some(claimed), Some(made)) => {
                normalise_channel(claimed) == normalise_channel(made)
            }
            (_, Some(claimed), Some(made)) => claimed == made,
            _ => false,
        };
        if !same {
            let why = if field == "channel" {
                "the approval policy follows it"
            } else {
                "the reviewer is shown it"
            };
            return Err(format!(
                "{said}'s {field} {} is not {argument}{field} {}: the key is made from {argument}{field}, and {why}; leave {field} out of {said}, nothing was queued",
                visible_inline(&claimed.to_string()),
                visible_inline(&made.to_string()),
            ));
        }
    }
    Ok(())
}

/// Whether two metas (as stored, JSON text) show one send: the same fields, a
/// recipient spelled another way that the key reads as the same (`Ana@Example.com`,
/// `ana@example.com`), a channel in another case. A resubmission that differs only so
/// is no new revision: it would void the approvals of what a person already read.
pub fn same_send(a: &str, b: &str) -> bool {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) = (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) else {
        return false;
    };
    a.len() == b.len()
        && a.iter().all(|(field, value)| {
            let Some(other) = b.get(field) else {
                return false;
            };
            match (field.as_str(), value.as_str(), other.as_str()) {
                ("channel", Some(x), Some(y)) => normalise_channel(x) == normalise_channel(y),
                ("to", Some(x), Some(y)) => {
                    crate::ledger::key::normalise_recipient(x)
                        == crate::ledger::key::normalise_recipient(y)
                }
                _ => value == other,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CLI: Door = Door {
        meta: "--meta",
        argument: "--",
    };

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_held_calls_meta_follows_an_edit_of_the_arguments_it_names_and_no_other_does() {
        let held = map(json!({"to": "sam@example.com", "intent": "payout · 40",
            "tool": "wire", "toArgument": "to", "intentArguments": ["memo", "amount"]}));
        let edited = json!({"to": "trudy@example.com", "memo": "payout", "amount": 40});
        let next = following(&held, &edited).unwrap();
        assert_eq!(next["to"], "trudy@example.com");
        assert_eq!(next["intent"], "payout · 40");
        // Unchanged, or the intent arguments gone (the tool's name, as when held).
        let same = json!({"to": "sam@example.com", "memo": "payout", "amount": 40});
        assert_eq!(following(&held, &same), None);
        let bare = following(&held, &json!({"to": "sam@example.com"})).unwrap();
        assert_eq!(bare["intent"], "wire");
        // Any other draft's meta says what its submitter said.
        let other = map(json!({"to": "ana@example.com", "intent": "Invoice 9"}));
        assert_eq!(following(&other, &edited), None);
    }

    #[test]
    fn a_meta_that_agrees_with_the_key_or_says_other_things_passes() {
        let derived =
            map(json!({"channel": "email", "to": "ana@example.com", "intent": "Invoice 9"}));
        for meta in [
            json!({}),
            json!({"channel": " EMAIL ", "to": "ana@example.com", "intent": "Invoice 9"}),
            json!({"customer": 42, "to_name": "Ana"}),
        ] {
            assert_eq!(check(&map(meta.clone()), &derived, CLI), Ok(()), "{meta}");
        }
    }

    #[test]
    fn a_meta_that_names_another_recipient_intent_channel_or_an_approver_is_refused() {
        let derived = map(
            json!({"channel": "email", "to": "attacker@evil.example", "intent": "refund", "window": "1d"}),
        );
        for (meta, names) in [
            (
                json!({"to": "customer@good.example"}),
                "--meta's to \"customer@good.example\" is not --to \"attacker@evil.example\"",
            ),
            (json!({"intent": "newsletter"}), "--meta's intent"),
            (json!({"to": 7}), "--meta's to 7"),
            (json!({"channel": "sms"}), "--meta's channel"),
            (
                json!({"window": "2d"}),
                "--meta's window \"2d\" is not --window \"1d\"",
            ),
            (
                json!({"approvedBy": "ceo"}),
                "--meta's approvedBy is written by send-once",
            ),
            (json!({"approvedAt": "2020-01-01"}), "--meta's approvedAt"),
            (
                json!({"toArgument": "to"}),
                "--meta's toArgument is written by send-once mcp proxy",
            ),
        ] {
            let refused = check(&map(meta.clone()), &derived, CLI).unwrap_err();
            assert!(refused.starts_with(names), "{meta}: {refused}");
            assert!(refused.contains("nothing was queued"), "{refused}");
        }
        // A key given as it is derives nothing; an approver is still refused.
        assert!(check(&map(json!({"to": "x"})), &Map::new(), CLI).is_ok());
        assert!(check(&map(json!({"approvedBy": "x"})), &Map::new(), CLI).is_err());
    }

    #[test]
    fn a_meta_that_respells_the_recipient_or_the_channel_shows_the_same_send() {
        let first = r#"{"channel":"email","to":"Ana@Example.com","intent":"invoice"}"#;
        for same in [
            r#"{"channel":"EMAIL","to":"ana@example.com","intent":"invoice"}"#,
            r#"{"intent":"invoice","to":" ana@example.com ","channel":"Email"}"#,
        ] {
            assert!(same_send(first, same), "{same}");
        }
        for other in [
            r#"{"channel":"email","to":"bo@example.com","intent":"invoice"}"#,
            r#"{"channel":"email","to":"Ana@Example.com","intent":"Invoice"}"#,
            r#"{"channel":"email","to":"Ana@Example.com","intent":"invoice","x":1}"#,
            r#"{"channel":"email","to":"Ana@Example.com"}"#,
            "not json",
        ] {
            assert!(!same_send(first, other), "{other}");
        }
    }
}
