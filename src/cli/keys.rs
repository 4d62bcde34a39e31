//! `key` and `hash`: the two values a person needs to see why the ledger or an approval
//! said what it said.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::{canonical, jsjson, key};

use super::output::print_json_text;
use super::{Exit, display_path, fail, print_json, print_stdout, read_text_arg};

#[derive(Args, Debug)]
pub struct KeyArgs {
    /// Where it goes: email, sms, slack, webhook... (case does not matter)
    #[arg(long, required_unless_present = "policy", conflicts_with = "policy")]
    pub channel: Option<String>,
    /// Who it goes to (e-mail addresses are lower-cased, phone numbers reduced to digits)
    #[arg(long, required_unless_present = "policy", conflicts_with = "policy")]
    pub to: Option<String>,
    /// What it is for, stable across runs (case matters)
    #[arg(long, required_unless_present = "policy", conflicts_with = "policy")]
    pub intent: Option<String>,
    /// Lets the same intent go out again in a new window (a day, a billing period)
    #[arg(long, conflicts_with = "policy")]
    pub window: Option<String>,
    /// Instead: the key of a tool call through `send-once mcp proxy`, under this policy
    /// file (with --tool and --args)
    #[arg(long, requires_all = ["tool", "args"])]
    pub policy: Option<PathBuf>,
    /// The tool called (with --policy)
    #[arg(long, requires = "policy")]
    pub tool: Option<String>,
    /// The call's arguments, a JSON object (with --policy)
    #[arg(long, requires = "policy", value_name = "JSON")]
    pub args: Option<String>,
    /// Print {"key", "preimage"} as JSON
    #[arg(long)]
    pub json: bool,
}

/// Which key a send (or a draft) is for: given with `--key`, or derived from
/// `--channel`, `--to`, `--intent` and `--window`. Flattened into `run` and
/// `draft submit`.
#[derive(Args, Debug)]
pub struct KeyChoice {
    /// The send key, if you computed it yourself
    #[arg(long, conflicts_with_all = ["channel", "to", "intent", "window"])]
    pub key: Option<String>,
    /// Channel, for deriving the key (with --to and --intent)
    #[arg(long)]
    pub channel: Option<String>,
    /// Recipient, for deriving the key
    #[arg(long)]
    pub to: Option<String>,
    /// Intent, for deriving the key
    #[arg(long)]
    pub intent: Option<String>,
    /// Window, for deriving the key
    #[arg(long)]
    pub window: Option<String>,
}

impl KeyChoice {
    /// The key, or a message naming what is missing or wrong.
    pub fn key(&self) -> Result<String, String> {
        match (&self.key, &self.channel, &self.to, &self.intent) {
            (Some(given), ..) => match key::check_key(given) {
                Ok(()) => Ok(given.clone()),
                Err(e) => Err(format!("--key: {e}")),
            },
            (None, Some(channel), Some(to), Some(intent)) => {
                key_of(channel, to, intent, self.window.as_deref()).map(|derived| derived.key)
            }
            _ => Err("give either --key, or --channel, --to and --intent".into()),
        }
    }

    /// What the key was derived from (channel, to, intent, window), for a draft's
    /// meta; empty when the key was given.
    pub fn derived_from(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        if self.key.is_none() {
            for (name, value) in [
                ("channel", &self.channel),
                ("to", &self.to),
                ("intent", &self.intent),
                ("window", &self.window),
            ] {
                if let Some(value) = value {
                    fields.insert(name.into(), value.clone().into());
                }
            }
        }
        fields
    }

    /// The caller's `--meta` with what the key was derived from added, so the entry
    /// says who and what it is about; a field the caller set is kept as set.
    pub fn with_derived(&self, meta: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
        let derived = self.derived_from();
        if derived.is_empty() {
            return meta;
        }
        let mut merged = meta.unwrap_or_default();
        for (k, v) in derived {
            merged.entry(k).or_insert(v);
        }
        Some(merged)
    }
}

/// `--meta`: a JSON object, or a message naming what it is instead.
pub fn parse_meta(text: Option<&str>) -> Result<Option<Map<String, Value>>, String> {
    let Some(text) = text else { return Ok(None) };
    // As JSON.parse reads it: a lone surrogate such as "\ud83d" is JSON, and is kept.
    let parsed = canonical::parse_json(text).map(|v| {
        let mut value = v.to_serde();
        jsjson::js_order(&mut value);
        value
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(format!(
            "--meta must be a JSON object, got {}",
            jsjson::json_kind(&other)
        )),
        Err(e) => Err(format!("--meta is not JSON: {e}")),
    }
}

/// A send key and the exact text hashed to make it.
pub struct DerivedKey {
    pub key: String,
    pub preimage: String,
}

/// The key for `--channel/--to/--intent/--window`, or a message naming what is wrong.
/// One send, one spelling: a field that only looks like another (an invisible
/// character, a Cyrillic letter) would be a second key, so it is refused here, for
/// `run`, `draft submit` and `key` alike (a key printed by `key` is pasted into
/// `run --key`).
pub fn key_of(
    channel: &str,
    to: &str,
    intent: &str,
    window: Option<&str>,
) -> Result<DerivedKey, String> {
    key::check_key_fields(channel, to, intent, window).map_err(|e| format!("--{e}"))?;
    let window = window.map(|w| key::Window::Text(w.to_owned()));
    let preimage =
        key::send_key_preimage(channel, to, intent, window.as_ref()).map_err(|e| e.to_string())?;
    Ok(DerivedKey {
        key: canonical::sha256_hex(&preimage),
        preimage,
    })
}

pub fn key(args: &KeyArgs) -> Exit {
    let derived = match (&args.policy, &args.channel, &args.to, &args.intent) {
        (Some(policy), ..) => call_key_of(policy, args),
        (None, Some(channel), Some(to), Some(intent)) => {
            key_of(channel, to, intent, args.window.as_deref())
        }
        _ => Err("give --channel, --to and --intent, or --policy, --tool and --args".into()),
    };
    match derived {
        Err(e) => fail(Exit::Refused, e),
        Ok(derived) if args.json => {
            let mut out = Map::new();
            out.insert("key".into(), derived.key.into());
            out.insert("preimage".into(), derived.preimage.into());
            print_json(&Value::Object(out));
            Exit::Ok
        }
        Ok(derived) => {
            print_stdout(&format!("{}\n", derived.key));
            Exit::Ok
        }
    }
}

/// The key `send-once mcp proxy` gives a call of `--tool` with `--args` under the
/// policy `path`, now (its window, when the tool's rule has one, is the current one).
fn call_key_of(path: &std::path::Path, args: &KeyArgs) -> Result<DerivedKey, String> {
    let policy = send_once::mcp::policy::Policy::load(path)?;
    let tool = args.tool.as_deref().unwrap_or_default();
    let text = args.args.as_deref().unwrap_or_default();
    let arguments = match canonical::parse_json(text).map(|v| v.to_serde()) {
        Ok(Value::Object(arguments)) => arguments,
        Ok(other) => {
            return Err(format!(
                "--args must be a JSON object (the call's arguments), got {}",
                jsjson::json_kind(&other)
            ));
        }
        Err(e) => return Err(format!("--args is not JSON: {e}")),
    };
    let rule = policy.rule(tool);
    let now = super::ledger_arg::clock()();
    send_once::mcp::call_key::call_key(&policy.upstream, tool, &arguments, &rule, now, None).map(
        |k| DerivedKey {
            key: k.key,
            preimage: k.preimage,
        },
    )
}

#[derive(Args, Debug)]
pub struct HashArgs {
    /// The JSON document; - or nothing reads stdin
    pub file: Option<PathBuf>,
    /// Print the canonical JSON that is hashed instead of the hash
    #[arg(long)]
    pub canonical: bool,
    /// Print {"sha256", "canonical"} as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn hash(args: &HashArgs) -> Exit {
    let path = args.file.clone().unwrap_or_else(|| PathBuf::from("-"));
    let text = match read_text_arg(&path, "document") {
        Ok(text) => text,
        Err(message) => return fail(Exit::Refused, message),
    };
    let canonical = match canonical::canonical_text(&text) {
        Ok(c) => c,
        Err(e) => {
            return fail(
                Exit::Refused,
                format!("{} is not JSON: {e}", display_path(&path)),
            );
        }
    };
    let sha = canonical::sha256_hex(&canonical);
    if args.json {
        let mut out = Map::new();
        out.insert("sha256".into(), sha.into());
        out.insert("canonical".into(), canonical.into());
        print_json(&Value::Object(out));
    } else if args.canonical {
        // JSON text: escaped as JSON, the same value that is hashed.
        print_json_text(&canonical);
    } else {
        print_stdout(&format!("{sha}\n"));
    }
    Exit::Ok
}
