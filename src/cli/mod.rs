//! Command-line parsing and the commands. Each command returns an [`Exit`]; messages
//! for people go to stderr, results (and `--json`) to stdout.

mod audit;
mod docs;
mod entries;
mod keys;
mod ledger_arg;
mod out_file;
mod output;
mod review;
mod run;
mod tui;

use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};

pub use output::{fail, note, print_json, print_stdout};

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
  0  sent now, or already sent (a duplicate prints the kept result, else the provider id)
  1  the send failed definitely; it may be retried
  2  refused or could not run (bad input, unusable ledger, a gate fired)
  3  unknown: the send may or may not have gone out; a person must check";

// `-h` is not a help flag, as in the Node CLI (whose recorded behaviour this matches):
// only `--help` is, on every command.
#[derive(Parser, Debug)]
#[command(
    name = "send-once",
    version,
    about = "Outbound sends that happen at most once, with a person in charge of what is unknown.",
    after_help = EXIT_CODES,
    disable_help_flag = true
)]
pub struct Cli {
    /// Never start the terminal UI; for scripts and cron (`send-once --headless audit`)
    #[arg(long, global = true)]
    headless: bool,
    /// Print help
    #[arg(long, global = true, action = ArgAction::Help)]
    help: Option<bool>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The review and reconciliation screen (full screen; q quits, ? shows the keys).
    Tui(tui::TuiArgs),
    /// List sends whose outcome is unknown: claimed, and never confirmed as sent or failed.
    #[command(after_help = audit::EXIT_CODES)]
    Audit(audit::AuditArgs),
    /// Record what happened to an unknown send, after checking with the provider.
    #[command(after_help = entries::RESOLVE_EXIT_CODES)]
    Resolve(entries::ResolveArgs),
    /// List ledger entries, newest claim first.
    Ls(entries::LsArgs),
    /// Show one entry and the decisions made about it.
    Show(entries::ShowArgs),
    /// Make a key sendable again, after a person checked it did not go out.
    Reset(entries::ResetArgs),
    /// Remove settled entries older than a duration (never a pending one).
    ///
    /// A removed key has no record left, so a later run for it sends again: choose a
    /// duration longer than anything might retry.
    Gc(entries::GcArgs),
    /// Print the decision log: every resolve and reset, with who, when and what came of it.
    Decisions(entries::DecisionsArgs),
    /// The review queue: submit drafts, push or recheck their facts, withdraw, show.
    #[command(subcommand)]
    Draft(review::DraftCommand),
    /// List the drafts waiting for review, oldest first, with their changes and fact drift.
    Approvals(review::ApprovalsArgs),
    /// Approve a draft's current revision: prints (or writes) the approval JSON.
    Approve(review::ApproveArgs),
    /// Reject a draft, with the reason.
    Reject(review::RejectArgs),
    /// Print a draft's stored approval JSON.
    Approval(review::ApprovalArgs),
    /// Send an approved draft at most once, if its approval still holds.
    #[command(after_help = EXIT_CODES)]
    Dispatch(review::DispatchArgs),
    /// Print the send key for a channel, recipient, intent and window.
    Key(keys::KeyArgs),
    /// Print the payload hash of a JSON document (or its canonical JSON).
    Hash(keys::HashArgs),
    /// Run a send command at most once for a key.
    #[command(after_help = EXIT_CODES)]
    Run(run::RunArgs),
    /// Print a shell completion script.
    Completions(docs::CompletionsArgs),
    /// Print the man page (roff).
    Man,
}

pub fn main() -> ExitCode {
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    output::json_errors(cli.command.json());
    if let Err(message) = cli.command.settle() {
        return output::finish(fail(Exit::Refused, message)).into();
    }
    let exit = match cli.command {
        Command::Tui(args) => tui::tui(&args, cli.headless),
        Command::Audit(args) => audit::audit(&args),
        Command::Resolve(args) => entries::resolve(&args),
        Command::Ls(args) => entries::ls(&args),
        Command::Show(args) => entries::show(&args),
        Command::Reset(args) => entries::reset(&args),
        Command::Gc(args) => entries::gc(&args),
        Command::Decisions(args) => entries::decisions(&args),
        Command::Draft(command) => review::draft(&command),
        Command::Approvals(args) => review::approvals(&args),
        Command::Approve(args) => review::approve(&args),
        Command::Reject(args) => review::reject(&args),
        Command::Approval(args) => review::approval(&args),
        Command::Dispatch(args) => review::dispatch(&args),
        Command::Key(args) => keys::key(&args),
        Command::Hash(args) => keys::hash(&args),
        Command::Run(args) => run::run(args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man => docs::man(),
    };
    output::finish(exit).into()
}

/// Help and the version are printed as clap prints them. A real parse error quotes
/// what was typed, which can hold escapes, so it goes out plain and made visible.
fn parse_failure(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit()
    }
    // clap quotes what was typed: a Postgres password must not be shown.
    let text = ledger_arg::redact_given_urls(&e.render().to_string());
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        send_once::text::visible(&text).as_bytes(),
    );
    ExitCode::from(e.exit_code().clamp(0, 255) as u8)
}

impl Command {
    /// Reads the `[LEDGER] ...` positionals clap counted, filling in the default
    /// ledger where the count says it was left out.
    fn settle(&mut self) -> Result<(), String> {
        match self {
            Command::Resolve(a) => a.settle(),
            Command::Show(a) => a.settle(),
            Command::Reset(a) => a.settle(),
            Command::Draft(d) => d.settle(),
            Command::Approve(a) => a.settle(),
            Command::Reject(a) => a.settle(),
            Command::Approval(a) => a.settle(),
            Command::Dispatch(a) => a.settle(),
            _ => Ok(()),
        }
    }

    /// Was `--json` asked for (so errors are JSON too)?
    fn json(&self) -> bool {
        match self {
            Command::Audit(a) => a.json,
            Command::Resolve(a) => a.json,
            Command::Ls(a) => a.json,
            Command::Show(a) => a.json,
            Command::Reset(a) => a.json,
            Command::Gc(a) => a.json,
            Command::Decisions(a) => a.json,
            Command::Draft(d) => d.json(),
            Command::Approvals(a) => a.json,
            Command::Approve(a) => a.json,
            Command::Reject(a) => a.json,
            Command::Approval(a) => a.json,
            Command::Dispatch(a) => a.json,
            Command::Key(a) => a.json,
            Command::Hash(a) => a.json,
            Command::Run(a) => a.json,
            Command::Tui(_) | Command::Completions(_) | Command::Man => false,
        }
    }
}

/// The async runtime a command runs its ledger calls on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(Exit::Refused, format!("cannot start: {e}")))
}

/// Reports a ledger error with its exit code: 1 for a refusal (no such key, a sent
/// entry), 2 for anything that kept the command from running.
pub fn store_failure(e: send_once::ledger::LedgerError) -> Exit {
    use send_once::ledger::LedgerError;
    let exit = match e {
        LedgerError::NotFound(_)
        | LedgerError::AlreadySent(_)
        | LedgerError::ResetSentNeedsForce(_)
        | LedgerError::ChangedSinceSeen { .. } => Exit::Failed,
        _ => Exit::Refused,
    };
    fail(exit, e.to_string())
}

/// The clap definition, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// How a file argument is named in messages: `-` is stdin.
pub fn display_path(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    }
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
