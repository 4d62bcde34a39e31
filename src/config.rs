//! The TUI's config file: which verify command `v` runs for each channel.
//!
//! It lives in the user's config directory (`send-once/config.toml` under
//! `$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application Support` on
//! macOS), or wherever `SEND_ONCE_CONFIG` names:
//!
//! ```toml
//! [verify]
//! email = "gmail-verify --account ops"
//! sms = "twilio-verify"
//! default = "generic-verify"   # optional: channels not listed
//! ```
//!
//! The channel is the entry's `meta.channel`. A verify command comes from here or from
//! `tui --verify` (which overrides the table for every channel), never from the ledger:
//! whoever writes a ledger must not choose what operators run. A file that cannot be
//! read or parsed does not stop the UI; what is wrong with it is said instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::provider::{Limit, split_command};
use crate::text::visible_inline;

/// The environment variable that names another config file (for tests, and for
/// operators who keep one per team).
pub const CONFIG_ENV: &str = "SEND_ONCE_CONFIG";

/// The key under `[verify]` used for channels that have no line of their own.
pub const DEFAULT_CHANNEL: &str = "default";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    verify: BTreeMap<String, String>,
}

/// The `[send]` table of the config file at `path`: the send command per channel that
/// `send-once mcp`'s `dispatch_draft` runs (an agent never names one). A missing file
/// is an empty table.
pub fn send_commands(path: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    #[derive(Deserialize)]
    struct SendTable {
        #[serde(default)]
        send: BTreeMap<String, String>,
    }
    let text = match read_operators_file(path) {
        Ok(Ok(text)) => text,
        Ok(Err(why)) => return Err(format!("config {} {why}", shown(path))),
        Err(_) => return Ok(BTreeMap::new()),
    };
    let table: SendTable = toml::from_str(&text)
        .map_err(|e| format!("config {}: {}", shown(path), toml_problem(&text, &e)))?;
    table
        .send
        .into_iter()
        .map(|(channel, line)| {
            let argv = split_command(&format!("send.{}", toml_key(&channel)), &line)?;
            Ok((crate::review::quorum::normalise_channel(&channel), argv))
        })
        .collect()
}

/// Where the config file is: `$SEND_ONCE_CONFIG` when set, else `config.toml` in the
/// user's config directory; `None` when there is no home to look in.
pub fn config_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    directories::ProjectDirs::from("", "", "send-once")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

/// One verify command, and where it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyCommand {
    /// As written, for messages.
    pub text: String,
    /// Split into words as a shell would (no shell runs it).
    pub argv: Vec<String>,
    /// "--verify", or "config.toml verify.email".
    pub from: String,
}

/// Which verify command each channel gets, and what is wrong with the config, if
/// anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySetup {
    /// `--verify`: every channel.
    pub every: Option<VerifyCommand>,
    /// The config file's `[verify]` lines, by channel (`default` among them).
    pub by_channel: BTreeMap<String, VerifyCommand>,
    /// Channels whose line could not be used: they get no command, not `default`'s
    /// (another provider's checker would answer for them).
    pub broken: Vec<String>,
    /// The config file looked at, if there is one to look at.
    pub config_path: Option<PathBuf>,
    /// What is wrong with the config file (cannot be read, cannot be parsed, a command
    /// that cannot be split), said in the status line and the help.
    pub problem: Option<String>,
    /// `--check-timeout`: past it the command's process group is killed (inconclusive).
    pub timeout: Limit,
}

impl VerifySetup {
    /// No verify command at all.
    pub fn none(timeout: Limit) -> VerifySetup {
        VerifySetup {
            every: None,
            by_channel: BTreeMap::new(),
            broken: Vec::new(),
            config_path: None,
            problem: None,
            timeout,
        }
    }

    /// `--verify` (already split) and the config file at `path`, if any.
    pub fn load(every: Option<VerifyCommand>, path: Option<PathBuf>, timeout: Limit) -> Self {
        let mut setup = VerifySetup::none(timeout);
        setup.every = every;
        let Some(path) = path else {
            return setup;
        };
        let named = std::env::var_os(CONFIG_ENV).is_some_and(|p| !p.is_empty());
        match read_table(&path, named) {
            Ok(Table {
                commands: table,
                broken,
                problems,
            }) => {
                setup.by_channel = table;
                setup.broken = broken;
                if !problems.is_empty() {
                    setup.problem =
                        Some(format!("config {}: {}", shown(&path), problems.join("; ")));
                }
            }
            Err(why) => setup.problem = Some(format!("config {}: {why}", shown(&path))),
        }
        setup.config_path = Some(path);
        setup
    }

    /// The command for an entry of `channel`, or why there is none and how to give one.
    pub fn command_for(&self, channel: Option<&str>) -> Result<&VerifyCommand, String> {
        if let Some(every) = &self.every {
            return Ok(every);
        }
        let listed = channel.and_then(|c| self.by_channel.get(c));
        let broken = channel.is_some_and(|c| self.broken.iter().any(|b| b == c));
        if let Some(command) = listed.or_else(|| {
            (!broken)
                .then(|| self.by_channel.get(DEFAULT_CHANNEL))
                .flatten()
        }) {
            return Ok(command);
        }
        let file = self
            .config_path
            .as_deref()
            .map_or_else(|| "the config file".to_owned(), shown);
        let (which, line) = match channel {
            Some(c) => (
                format!("channel {}", visible_inline(&format!("{c:?}"))),
                format!("{} = \"CMD\"", toml_key(c)),
            ),
            None => (
                "an entry without meta.channel".to_owned(),
                format!("{DEFAULT_CHANNEL} = \"CMD\""),
            ),
        };
        let mut why = format!(
            "No verify command for {which}: start with send-once tui --verify CMD, or add {line} under [verify] in {file}"
        );
        if let Some(problem) = &self.problem {
            why.push_str(&format!(" ({problem})"));
        }
        Err(why)
    }

    /// One line for the help: where `v`'s commands come from.
    pub fn describe(&self) -> String {
        let mut text = match (&self.every, self.by_channel.is_empty()) {
            (Some(every), _) if every.from != "--verify" => format!(
                "v runs {} ({}) for every channel",
                visible_inline(&every.text),
                visible_inline(&every.from)
            ),
            (Some(every), _) => format!(
                "v runs --verify {} for every channel",
                visible_inline(&every.text)
            ),
            (None, false) => {
                let channels: Vec<&str> = self.by_channel.keys().map(String::as_str).collect();
                format!(
                    "v runs the verify command {} names for: {}",
                    self.config_path.as_deref().map_or_else(String::new, shown),
                    visible_inline(&channels.join(", "))
                )
            }
            (None, true) => format!(
                "v has no verify command: send-once tui --verify CMD, or [verify] in {}",
                self.config_path
                    .as_deref()
                    .map_or_else(|| "the config file".to_owned(), shown)
            ),
        };
        text.push_str(&format!(" (time limit {}).", self.timeout.written));
        if let Some(problem) = &self.problem {
            text.push_str(&format!(" ✗ {problem}"));
        }
        text
    }
}

/// A path as a person reads it, made visible.
fn shown(path: &Path) -> String {
    visible_inline(&path.display().to_string()).into_owned()
}

/// A channel name as it would be written as a TOML key.
fn toml_key(channel: &str) -> String {
    if !channel.is_empty()
        && channel
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        channel.to_owned()
    } else {
        visible_inline(&format!("{channel:?}")).into_owned()
    }
}

/// What a config file's `[verify]` table gave.
#[derive(Default)]
struct Table {
    /// The commands, by channel.
    commands: BTreeMap<String, VerifyCommand>,
    /// Channels whose line could not be used.
    broken: Vec<String>,
    /// What could not be used, in words.
    problems: Vec<String>,
}

/// The longest config file read: it holds a few command lines.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The config file's bytes, if it is a regular file of at most [`MAX_CONFIG_BYTES`]:
/// a FIFO would block the screen before it draws, and a device (`/dev/zero` behind a
/// symlink) would fill the memory. Opened without blocking, then looked at through the
/// descriptor, so what is read is what was checked.
fn read_config_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "it is not a regular file (a FIFO, a device or a directory)",
        ));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {} KiB",
            MAX_CONFIG_BYTES / 1024
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {} KiB",
            MAX_CONFIG_BYTES / 1024
        )));
    }
    Ok(bytes)
}

/// The text of a file the operator wrote that names commands to run (config.toml, an
/// MCP policy), or why it is not taken: not a regular file, too large, writable by
/// others (whoever can write it chooses what runs: as ssh does with its config, only
/// the user or root may own it, and only its owner may write it), or not UTF-8.
pub fn read_operators_file(path: &Path) -> std::io::Result<Result<String, String>> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = match read_config_file(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(e),
        Err(e) => return Ok(Err(format!("cannot be read ({e})"))),
    };
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and touches no memory.
        let me = unsafe { libc::geteuid() };
        if meta.permissions().mode() & 0o022 != 0 {
            return Ok(Err(
                "others can write to it (group or world), so they could name any command (chmod go-w it)"
                    .to_owned(),
            ));
        }
        if meta.uid() != me && meta.uid() != 0 {
            return Ok(Err(format!(
                "it belongs to another user (uid {}), who could name any command",
                meta.uid()
            )));
        }
    }
    Ok(String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned()))
}

/// A TOML error as a person reads it: what is wrong and on which line.
pub fn toml_problem(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end_matches('.').to_owned();
    let at = e
        .span()
        .map(|span| {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(" at line {line}")
        })
        .unwrap_or_default();
    format!("not valid{at}: {}", visible_inline(&message))
}

/// The `[verify]` table of the file at `path`, each command split, with what could not
/// be used of it. A missing file is an empty table, unless it was named by
/// `SEND_ONCE_CONFIG` (then the name is wrong, and that is said).
fn read_table(path: &Path, named: bool) -> Result<Table, String> {
    const NONE_READ: &str = "; no verify command is read from it";
    let text = match read_operators_file(path) {
        Ok(Ok(text)) => text,
        Ok(Err(why)) => return Err(format!("{why}{NONE_READ}")),
        Err(_) if !named => return Ok(Table::default()),
        Err(_) => {
            return Err(format!(
                "{CONFIG_ENV} names it, but there is no such file{NONE_READ}"
            ));
        }
    };
    let parsed: ConfigFile = toml::from_str(&text).map_err(|e| {
        format!(
            "{}{NONE_READ}",
            toml_problem(&text, &e).replacen("not valid", "not valid TOML", 1)
        )
    })?;
    let mut table = BTreeMap::new();
    let mut broken = Vec::new();
    let mut problems = Vec::new();
    for (channel, text) in parsed.verify {
        let key = format!("verify.{}", toml_key(&channel));
        match split_command(&key, &text) {
            Ok(argv) => {
                let from = format!(
                    "{} {key}",
                    path.file_name().map_or_else(
                        || shown(path),
                        |n| visible_inline(&n.to_string_lossy()).into_owned()
                    )
                );
                table.insert(channel, VerifyCommand { text, argv, from });
            }
            Err(why) => {
                problems.push(format!("{why}; that channel has no verify command"));
                broken.push(channel);
            }
        }
    }
    Ok(Table {
        commands: table,
        broken,
        problems,
    })
}
