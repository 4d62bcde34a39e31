//! Command-line parsing and the commands. Each command returns an [`Exit`]; messages
//! for people go to stderr, results (and `--json`) to stdout.

mod audit;
mod decisions;
mod dispatch;
mod docs;
mod entries;
mod init;
mod interrupt;
mod keys;
mod ledger_arg;
mod log;
mod mail;
mod mcp;
mod out_file;
mod output;
mod policy;
mod queue_arg;
mod reconcile;
mod resolve;
mod review;
mod run;
mod tui;

use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};

pub use output::{Kind, Problem, fail, note, print_json, print_stdout};

use serde_json::Value;

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

/// What every command's exit status means, for the top-level help: each command's own
/// help says what it uses (audit's 1 is "something unknown", not a failed send).
const ALL_EXIT_CODES: &str = "\
Exit codes (each command's --help gives its own):
  0  done: sent now or already sent, nothing unknown (audit), every key resolved
  1  run, dispatch, mail: the send failed definitely and may be retried; audit,
     reconcile: something is still unknown; decisions verify: the chain is broken;
     others: refused (no such entry or draft, a sent entry marked failed, a
     decision on something that changed since it was seen)
  2  refused or could not run (bad input, unusable ledger, a gate fired)
  3  unknown: the send may or may not have gone out; a person must check";

// clap's own help flag is off so that `--help` (long) and `-h` (short) are declared by
// hand: `--help` here, `-h` in `command`, for every command and for `send-once -h`
// alone (which the Node CLI refused only because it declared no short options, N7).
#[derive(Parser, Debug)]
#[command(
    name = "send-once",
    version,
    about = "Outbound sends that happen at most once, with a person in charge of what is unknown.",
    after_help = ALL_EXIT_CODES,
    disable_help_flag = true
)]
pub struct Cli {
    /// Never start the terminal UI; for scripts and cron (`send-once --headless audit`)
    // Listed after each command's own options, not first.
    #[arg(long, global = true, display_order = 900)]
    headless: bool,
    /// Print help (-h for a short one)
    #[arg(long, global = true, action = ArgAction::HelpLong, display_order = 901)]
    help: Option<bool>,
    /// How spans are written on stderr when SEND_ONCE_LOG is set (SEND_ONCE_LOG=info; tui writes none)
    #[arg(long, global = true, value_enum, default_value_t, display_order = 902)]
    log_format: log::LogFormat,
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
    #[command(after_help = resolve::RESOLVE_EXIT_CODES)]
    Resolve(resolve::ResolveArgs),
    /// Ask the provider about every unknown send, and settle what it answers for.
    #[command(after_help = reconcile::EXIT_CODES)]
    Reconcile(reconcile::ReconcileArgs),
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
    /// Print the decision log: every resolve, reset, submit, approve, reject, withdraw, edit and policy, each verify answer, and each send a provider check confirmed or took over, with who, when and what came of it; `decisions verify` checks its hash chain.
    Decisions(entries::DecisionsArgs),
    /// The review queue: submit drafts, edit them, push or recheck their facts, withdraw, show.
    #[command(subcommand)]
    Draft(review::DraftCommand),
    /// List the drafts waiting for review, oldest first, with their changes and fact drift.
    Approvals(review::ApprovalsArgs),
    /// Approve a draft's current revision: prints (or writes) the approval JSON; for a draft that needs several approvers, an approval short of the number is recorded as a vote (exit 0, no JSON, nothing written to --out) and only the last of them gets it.
    Approve(review::ApproveArgs),
    /// Reject a draft, with the reason.
    Reject(review::RejectArgs),
    /// Print a draft's stored approval JSON.
    Approval(review::ApprovalArgs),
    /// Print the ledger's approval policy, or set it: how many distinct people must approve a new draft, per channel or for all.
    #[command(after_help = policy::POLICY_HELP)]
    Policy(policy::PolicyArgs),
    /// Send an approved draft at most once, if its approval still holds.
    #[command(after_help = EXIT_CODES)]
    Dispatch(dispatch::DispatchArgs),
    /// Print the send key for a channel, recipient, intent and window.
    Key(keys::KeyArgs),
    /// Print the payload hash of a JSON document (or its canonical JSON).
    Hash(keys::HashArgs),
    /// Create an empty ledger (SQLite, or JSON Lines for a name ending in .jsonl), or say that one is already there.
    Init(init::InitArgs),
    /// Run a send command at most once for a key.
    #[command(after_help = EXIT_CODES)]
    Run(run::RunArgs),
    /// Send one e-mail at most once through a Gmail mailer, behind the ledger and a Sent-folder check (the Gmail wrapper's drop-in).
    #[command(after_help = mail::MAIL_EXIT_CODES)]
    Mail(mail::MailArgs),
    /// Serve the review queue to agents over MCP (stdio): they submit drafts and ask what became of them; only a person approves.
    Mcp(mcp::McpArgs),
    /// Print a shell completion script.
    Completions(docs::CompletionsArgs),
    /// Print the man page (roff), or write one page per command with --dir.
    Man(docs::ManArgs),
}

pub fn main() -> ExitCode {
    let parsed = command()
        .try_get_matches()
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    let mut cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    output::json_errors(cli.command.json());
    // Spans written on stderr would draw over the full-screen UI: the TUI installs no
    // log subscriber, whatever SEND_ONCE_LOG says.
    if !matches!(cli.command, Command::Tui(_)) {
        log::init(cli.log_format);
        send_once::stores::postgres::on_weak_durability(|warning| {
            eprintln!("warning: {}", send_once::text::visible(warning));
        });
    }
    if let Err(message) = cli.command.settle() {
        return output::finish(fail(Exit::Refused, message)).into();
    }
    let exit = match cli.command {
        Command::Tui(args) => tui::tui(&args, cli.headless),
        Command::Audit(args) => audit::audit(&args),
        Command::Resolve(args) => resolve::resolve(&args),
        Command::Reconcile(args) => reconcile::reconcile(&args),
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
        Command::Policy(args) => policy::policy(&args),
        Command::Key(args) => keys::key(&args),
        Command::Hash(args) => keys::hash(&args),
        Command::Init(args) => init::init(&args),
        Command::Run(args) => run::run(args),
        Command::Mail(args) => mail::mail(&args),
        Command::Mcp(args) => mcp::mcp(&args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
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
    // Under --json even a flag clap refused is the one JSON error object, so a script
    // reading stdout is never left with nothing.
    let wants_json = std::env::args_os()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json");
    if wants_json {
        let message = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        print_json(&output::error_json(
            Exit::Refused,
            &Problem::new(Kind::BadInput, message),
        ));
    }
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
            Command::Approve(a) => a.draft.settle(),
            Command::Reject(a) => a.draft.settle(),
            Command::Approval(a) => a.draft.settle(),
            Command::Dispatch(a) => a.settle(),
            _ => Ok(()),
        }
    }

    /// Was `--json` asked for (so errors are JSON too)?
    fn json(&self) -> bool {
        match self {
            Command::Audit(a) => a.json,
            Command::Resolve(a) => a.json,
            Command::Reconcile(a) => a.json,
            Command::Ls(a) => a.json,
            Command::Show(a) => a.json,
            Command::Reset(a) => a.json,
            Command::Gc(a) => a.json,
            Command::Decisions(a) => a.json || a.command.as_ref().is_some_and(|c| c.json()),
            Command::Draft(d) => d.json(),
            Command::Approvals(a) => a.json,
            Command::Approve(a) => a.json,
            Command::Reject(a) => a.json,
            Command::Approval(a) => a.json,
            Command::Dispatch(a) => a.json,
            Command::Policy(a) => a.json,
            Command::Key(a) => a.json,
            Command::Hash(a) => a.json,
            Command::Init(a) => a.json,
            Command::Run(a) => a.json,
            Command::Mail(a) => a.json,
            Command::Tui(_) | Command::Mcp(_) | Command::Completions(_) | Command::Man(_) => false,
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
    let (exit, problem) = ledger_problem(e);
    output::fail_with(exit, problem)
}

/// A ledger error as an exit code and a problem of its kind. Not found is worded one
/// way and exits 1 for every command (as `resolve` always has, and as the Node CLI
/// does).
pub fn ledger_problem(e: send_once::ledger::LedgerError) -> (Exit, Problem) {
    use send_once::ledger::LedgerError;
    match e {
        LedgerError::NotFound(key) => (
            Exit::Failed,
            Problem::new(Kind::NotFound, format!("no entry for {key}")).with("key", Some(key)),
        ),
        LedgerError::AlreadySent(ref key) | LedgerError::ResetSentNeedsForce(ref key) => {
            let key = key.clone();
            (
                Exit::Failed,
                Problem::new(Kind::Refused, e).with("key", Some(key)),
            )
        }
        LedgerError::FailedButFound { ref key, .. } => {
            let key = key.clone();
            (
                Exit::Refused,
                Problem::new(Kind::Refused, e).with("key", Some(key)),
            )
        }
        LedgerError::MayStillRun { ref key, .. } | LedgerError::FoundByVerify { ref key, .. } => {
            let key = key.clone();
            (
                Exit::Failed,
                Problem::new(Kind::Refused, e).with("key", Some(key)),
            )
        }
        LedgerError::ChangedSinceSeen { ref key, .. } => {
            let key = key.clone();
            (
                Exit::Failed,
                Problem::new(Kind::DecidedFirst, e).with("key", Some(key)),
            )
        }
        LedgerError::AmbiguousKey { ref matches, .. } => {
            let matches: Vec<Value> = matches.iter().map(|k| k.clone().into()).collect();
            (
                Exit::Refused,
                Problem::new(Kind::BadInput, e).with("matches", Some(matches)),
            )
        }
        LedgerError::EmptyKey | LedgerError::BadKey(_) | LedgerError::ResolveToPending => {
            (Exit::Refused, Problem::new(Kind::BadInput, e))
        }
        LedgerError::Store(store) => (Exit::Refused, store_problem(&store)),
        LedgerError::Unrecorded { .. } => (Exit::Unknown, Problem::new(Kind::Unknown, e)),
        LedgerError::PrecheckInconclusive { .. } => (Exit::Refused, Problem::new(Kind::Refused, e)),
        other => (Exit::Refused, Problem::new(Kind::Io, other)),
    }
}

/// A store error as a problem: a missing ledger, a file that is not one, or trouble
/// reading or writing it.
pub fn store_problem(e: &send_once::ledger::StoreError) -> Problem {
    use send_once::ledger::StoreError;
    let kind = match e {
        StoreError::NotFound(_) => Kind::NoLedger,
        StoreError::IsDirectory(_)
        | StoreError::NotARegularFile(_)
        | StoreError::PostgresNotSupported(_)
        | StoreError::NoReviewQueue(_)
        | StoreError::NotALedger { .. }
        | StoreError::NewerSchema { .. } => Kind::NotALedger,
        StoreError::BadLocation { .. } => Kind::BadInput,
        _ => Kind::Io,
    };
    Problem::new(kind, e)
}

/// The clap definition, for parsing, completions and the man page: every command
/// (nested ones too, and `send-once` alone) takes `-h` for short help beside `--help`
/// for the long one.
pub fn command() -> clap::Command {
    let short_help = clap::Arg::new("short_help")
        .short('h')
        .display_order(902)
        .action(ArgAction::HelpShort)
        .help("Print short help (--help for more)");
    <Cli as clap::CommandFactory>::command()
        .mut_subcommands(|sub| sub.arg(short_help.clone().global(true)))
        .arg(short_help.clone())
}

/// How a file argument is named in messages: `-` is stdin.
pub fn display_path(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    }
}

/// The most a file argument (a payload, facts) may hold. A payload is an e-mail or a
/// message, not a disk image: past this it is refused rather than read into memory
/// without end (`--payload /dev/zero`).
pub const MAX_FILE_ARG_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a file argument, `-` meaning stdin, as UTF-8 text: a regular file or a pipe
/// (`<(jq …)`), never a device or a directory, and at most [`MAX_FILE_ARG_BYTES`].
pub fn read_text_arg(path: &std::path::Path, what: &str) -> Result<String, String> {
    use std::io::Read as _;
    use std::os::unix::fs::FileTypeExt as _;
    let too_big = || {
        format!(
            "the {what} {} is larger than {} MiB; send-once does not take one that large",
            display_path(path),
            MAX_FILE_ARG_BYTES / (1024 * 1024)
        )
    };
    let mut buf = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_FILE_ARG_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read the {what} from stdin: {e}"))?;
    } else {
        let kind = std::fs::metadata(path)
            .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))?
            .file_type();
        if kind.is_dir() {
            return Err(format!(
                "the {what} {} is a directory, not a file",
                path.display()
            ));
        }
        if !(kind.is_file() || kind.is_fifo()) {
            return Err(format!(
                "the {what} {} is a device, not a file",
                path.display()
            ));
        }
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_FILE_ARG_BYTES + 1).read_to_end(&mut buf))
            .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))?;
    }
    if buf.len() as u64 > MAX_FILE_ARG_BYTES {
        return Err(too_big());
    }
    let bytes = buf;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the {what} {} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}
