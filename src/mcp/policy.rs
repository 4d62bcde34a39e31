//! The proxy's policy file: how each tool of the upstream server is gated (pass, once,
//! hold), and what of its arguments makes the key, names the recipient and reads as
//! the intent.
//!
//! ```toml
//! upstream = "gmail"       # required: the name in every key and row
//! [default]
//! mode = "hold"            # required: for a tool the policy does not name
//! [tools.send_email]
//! mode = "once"
//! channel = "email"        # else "mcp:<upstream>"
//! to = "to"                # the argument that names the recipient
//! intent = ["subject"]     # arguments that make the intent readable
//! exclude = ["request_id"] # top-level arguments left out of the key
//! key = ["to", "subject"]  # or: the only arguments that make the key
//! window = "1d"            # the same call may happen again in a new window
//! timeout = "5m"           # how long the proxy waits for the upstream
//! error = "failed"         # an isError result is a failed send (default: unknown)
//! verify = "CMD"           # the run gate's verify command
//! ```
//!
//! The file is the operator's: one that others can write is refused, as config.toml
//! is. Nothing is defaulted silently: a policy without `upstream` or `[default]`, an
//! unknown field or a mode misspelled is refused with its line.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::text::visible_inline;

/// How a tool's calls are gated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Forwarded as they come: reads, searches.
    Pass,
    /// Claimed in the ledger, then forwarded: the same call happens at most once.
    Once,
    /// Queued as a draft for a person; forwarded once approved.
    Hold,
}

impl Mode {
    /// As the policy spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Pass => "pass",
            Mode::Once => "once",
            Mode::Hold => "hold",
        }
    }
}

/// What an `isError` result from the upstream means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorMeans {
    /// It may or may not have happened: a person settles it.
    #[default]
    Unknown,
    /// The tool did not act: the call may be tried again.
    Failed,
}

/// One tool's rule.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolRule {
    /// How its calls are gated.
    pub mode: Mode,
    /// The channel its sends are under (the approval policy follows it).
    pub channel: String,
    /// The argument that names the recipient.
    pub to: Option<String>,
    /// The arguments that make the intent readable.
    pub intent: Vec<String>,
    /// Top-level arguments left out of the key.
    pub exclude: Vec<String>,
    /// When not empty, the only top-level arguments that make the key.
    pub key: Vec<String>,
    /// The window after which the same call may happen again.
    pub window: Option<Duration>,
    /// How long the proxy waits for the upstream; None takes `--timeout`.
    pub timeout: Option<Duration>,
    /// What an `isError` result means.
    pub error: ErrorMeans,
    /// The verify command (split as a shell would, run without one).
    pub verify: Option<Vec<String>>,
}

/// A policy, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The name in every key and row.
    pub upstream: String,
    /// The mode of a tool the policy does not name.
    pub default: Mode,
    /// The tools it names.
    pub tools: BTreeMap<String, ToolRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    upstream: Option<String>,
    default: Option<DefaultTable>,
    #[serde(default)]
    tools: BTreeMap<String, ToolTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultTable {
    mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolTable {
    mode: Option<Mode>,
    channel: Option<String>,
    to: Option<String>,
    #[serde(default)]
    intent: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    key: Vec<String>,
    window: Option<String>,
    timeout: Option<String>,
    error: Option<ErrorMeans>,
    verify: Option<String>,
}

impl Policy {
    /// Reads and checks the policy at `path`, or says what is wrong with it.
    pub fn load(path: &Path) -> Result<Policy, String> {
        let shown = visible_inline(&path.display().to_string()).into_owned();
        let text = match crate::config::read_operators_file(path) {
            Ok(Ok(text)) => text,
            Ok(Err(why)) => return Err(format!("the policy {shown} is refused: {why}")),
            Err(e) => return Err(format!("the policy {shown} cannot be read: {e}")),
        };
        Policy::parse(&text).map_err(|why| format!("the policy {shown} is {why}"))
    }

    /// Checks the policy in `text`; the error says what is wrong, and where.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| crate::config::toml_problem(text, &e))?;
        let line_of = |needle: &str| {
            text.find(needle)
                .map(|at| format!(" (line {})", text[..at].matches('\n').count() + 1))
                .unwrap_or_default()
        };
        let upstream = match file.upstream {
            Some(name) if !name.trim().is_empty() => name,
            Some(_) => {
                return Err(format!(
                    "not valid{}: upstream is empty",
                    line_of("upstream")
                ));
            }
            None => {
                return Err(
                    "not valid: it has no upstream = \"NAME\" (the name in every key and row); nothing is assumed".to_owned(),
                );
            }
        };
        crate::ledger::key::check_key_field("channel", &upstream)
            .map_err(|e| format!("not valid{}: upstream {}", line_of("upstream"), e.problem))?;
        let default = match file.default.and_then(|d| d.mode) {
            Some(mode) => mode,
            None => {
                return Err(
                    "not valid: it has no [default] with mode = \"pass\", \"once\" or \"hold\" for the tools it does not name; nothing is assumed".to_owned(),
                );
            }
        };
        let mut tools = BTreeMap::new();
        for (name, table) in file.tools {
            let at = line_of(&format!("[tools.{name}]"));
            let rule = tool_rule(&upstream, &name, table)
                .map_err(|why| format!("not valid{at}: [tools.{}] {why}", visible_inline(&name)))?;
            tools.insert(name, rule);
        }
        Ok(Policy {
            upstream,
            default,
            tools,
        })
    }

    /// The rule for `tool`: its own, or the default mode's with nothing else said.
    pub fn rule(&self, tool: &str) -> ToolRule {
        self.tools.get(tool).cloned().unwrap_or_else(|| ToolRule {
            mode: self.default,
            channel: self.default_channel(),
            to: None,
            intent: Vec::new(),
            exclude: Vec::new(),
            key: Vec::new(),
            window: None,
            timeout: None,
            error: ErrorMeans::Unknown,
            verify: None,
        })
    }

    /// `mcp:<upstream>`: the channel of a tool whose rule names none, so `policy
    /// --channel mcp:<upstream>` can ask two approvers of everything it holds.
    pub fn default_channel(&self) -> String {
        format!("mcp:{}", self.upstream)
    }
}

fn tool_rule(upstream: &str, name: &str, table: ToolTable) -> Result<ToolRule, String> {
    let mode = table
        .mode
        .ok_or("has no mode = \"pass\", \"once\" or \"hold\"")?;
    let duration = |field: &str, text: Option<String>| -> Result<Option<Duration>, String> {
        text.map(|t| {
            crate::js::duration::parse_duration(&t)
                .ok()
                .filter(|ms| *ms > 0.0 && ms.is_finite())
                .map(|ms| Duration::from_millis(ms as u64))
                .ok_or_else(|| {
                    format!(
                        "{field} = {} is not a duration (30s, 5m, 1d)",
                        visible_inline(&format!("{t:?}"))
                    )
                })
        })
        .transpose()
    };
    let verify = match table.verify {
        None => None,
        Some(line) => Some(crate::provider::split_command(
            &format!("tools.{name}.verify"),
            &line,
        )?),
    };
    if let Some(field) = table
        .intent
        .iter()
        .chain(&table.exclude)
        .chain(&table.key)
        .chain(&table.to)
        .find(|f| f.trim().is_empty())
    {
        return Err(format!("names an empty argument {field:?}"));
    }
    if let Some(to) = &table.to
        && (table.exclude.contains(to) || !(table.key.is_empty() || table.key.contains(to)))
    {
        return Err(format!(
            "leaves its recipient argument {to:?} out of the key"
        ));
    }
    let channel = table.channel.unwrap_or_else(|| format!("mcp:{upstream}"));
    crate::ledger::key::check_key_field("channel", &channel)
        .map_err(|e| format!("channel {}", e.problem))?;
    Ok(ToolRule {
        mode,
        channel,
        to: table.to,
        intent: table.intent,
        exclude: table.exclude,
        key: table.key,
        window: duration("window", table.window)?,
        timeout: duration("timeout", table.timeout)?,
        error: table.error.unwrap_or_default(),
        verify,
    })
}
