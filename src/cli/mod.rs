//! Command-line parsing and the commands. Each command returns an [`Exit`]; messages
//! for people go to stderr, results (and `--json`) to stdout.

mod keys;
mod run;
mod send_command;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes, shared by every command (as the Gmail wrapper and the Node CLI use them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Done: sent now, already sent, nothing unknown.
    Ok = 0,
    /// The send failed definitely (may be retried), or something is unknown (audit).
    Failed = 1,
    /// Refused, or could not run: bad input, a gate fired, the ledger is unusable.
    Refused = 2,
    /// Unknown: the send may or may not have gone out; a person must verify.
    Unknown = 3,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

const EXIT_CODES: &str = "\
Exit codes:
  0  sent now, or already sent (a duplicate prints the stored result)
  1  the send failed definitely; it may be retried
  2  refused or could not run (bad input, unusable ledger, a gate fired)
  3  unknown: the send may or may not have gone out; a person must check";

#[derive(Parser, Debug)]
#[command(
    name = "send-once",
    version,
    about = "Outbound sends that happen at most once, with a person in charge of what is unknown.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the send key for a channel, recipient, intent and window.
    Key(keys::KeyArgs),
    /// Print the payload hash of a JSON document (or its canonical JSON).
    Hash(keys::HashArgs),
    /// Run a send command at most once for a key.
    #[command(after_help = EXIT_CODES)]
    Run(run::RunArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let exit = match cli.command {
        Command::Key(args) => keys::key(&args),
        Command::Hash(args) => keys::hash(&args),
        Command::Run(args) => run::run(args),
    };
    exit.into()
}

/// Tells the person something on stderr.
pub fn note(message: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "send-once: {message}");
}

/// Reports a problem on stderr and gives the exit code for it.
pub fn fail(exit: Exit, message: impl std::fmt::Display) -> Exit {
    note(message);
    exit
}

/// How a file argument is named in messages: `-` is stdin.
pub fn display_path(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Writes a result to stdout. A closed pipe (`| head`) is not an error worth a message.
pub fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Reads a file argument, `-` meaning stdin, as UTF-8 text.
pub fn read_text_arg(path: &std::path::Path, what: &str) -> Result<String, String> {
    let bytes = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("cannot read the {what} from stdin: {e}"))?;
        buf
    } else {
        std::fs::read(path).map_err(|e| {
            if path.is_dir() {
                format!("the {what} {} is a directory, not a file", path.display())
            } else {
                format!("cannot read the {what} {}: {e}", path.display())
            }
        })?
    };
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the {what} {} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}
