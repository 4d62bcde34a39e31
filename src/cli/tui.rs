//! `send-once tui [LEDGER] [--by NAME] [--older-than D] [--demo] [--view V] [--key K]
//! [--verify CMD] [--check-timeout D]`.

use std::io::IsTerminal;

use clap::Args;

use send_once::config::{self, VerifyCommand, VerifySetup};
use send_once::ledger::Access;
use send_once::ledger::LedgerLocation;
use send_once::open::Open;
use send_once::provider::split_command;
use send_once::ui::{self, UiOptions};

use super::ledger_arg::{by_or_default, check_by, clock, duration_flag, ledger_or_default};
use super::{Exit, fail};

#[derive(Args, Debug)]
pub struct TuiArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Your name on decisions (default: $SEND_ONCE_USER, else the OS user)
    #[arg(long)]
    pub by: Option<String>,
    /// Unknown sends claimed more recently than this are marked as maybe still in flight
    #[arg(long, default_value = "5m", allow_hyphen_values = true)]
    pub older_than: String,
    /// Open a throwaway ledger seeded with example drafts, unknown sends and history
    #[arg(long, conflicts_with = "ledger")]
    pub demo: bool,
    /// Open on this view (default: approvals, or unknown when there is nothing to review)
    #[arg(long, value_parser = ["approvals", "unknown", "ledger", "decisions"])]
    pub view: Option<String>,
    /// Open with this key (or draft id) selected, for a link in an alert
    #[arg(long)]
    pub key: Option<String>,
    /// The verify command `v` runs for every channel (overrides the [verify] table of
    /// the config file, $SEND_ONCE_CONFIG or send-once/config.toml in the config directory)
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// How long a verify command may take before its process group is killed (inconclusive)
    #[arg(
        long,
        value_name = "D",
        default_value = "30s",
        allow_hyphen_values = true
    )]
    pub check_timeout: String,
}

pub fn tui(args: &TuiArgs, headless: bool) -> Exit {
    if headless {
        return fail(
            Exit::Refused,
            "--headless: the tui is the one command that needs a terminal; use audit, ls or approvals instead",
        );
    }
    let older_than_ms = match duration_flag("--older-than", &args.older_than) {
        Ok(ms) => send_once::ledger::duration::whole_ms(ms),
        Err(message) => return fail(Exit::Refused, message),
    };
    if let Err(message) = check_by(args.by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    // An empty one (an unset shell variable in an alert's link) would open a search
    // for nothing, said as if it were something (AI8).
    if args.key.as_deref().is_some_and(|key| key.trim().is_empty()) {
        return fail(
            Exit::Refused,
            "--key names nothing: give a send key, a prefix of one, or a draft's id; leave it out to open the queue",
        );
    }
    let verify = match verify_setup(args) {
        Ok(verify) => verify,
        Err(message) => return fail(Exit::Refused, message),
    };
    // A ledger no command could open is bad input, said before asking for a terminal.
    let given = if args.demo {
        None
    } else {
        match ledger_or_default(args.ledger.as_ref()) {
            Ok(location) if args.ledger.is_none() && !default_exists(&location) => {
                return fail(Exit::Refused, no_ledger_yet(&location));
            }
            Ok(location) => match location.check(Access::ReadWrite) {
                Ok(()) => Some(location),
                Err(e) => return fail(Exit::Refused, e.to_string()),
            },
            Err(e) => return fail(Exit::Refused, e),
        }
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return fail(
            Exit::Refused,
            "the tui needs a terminal; for scripts use send-once audit, ls or approvals",
        );
    }
    let demo = if args.demo {
        match DemoLedger::create() {
            Ok(demo) => Some(demo),
            Err(e) => return fail(Exit::Refused, format!("--demo: {e}")),
        }
    } else {
        None
    };
    // The demo's sends are made up: a configured verify command would ask a real
    // provider about them. It gets its own, unless --verify names one.
    let mut verify = verify;
    if let Some(demo) = &demo
        && verify.every.is_none()
    {
        verify.every = Some(demo.verify.clone());
    }
    let ledger = match (&demo, given) {
        (Some(demo), _) => LedgerLocation::Sqlite(demo.ledger.clone()),
        (None, Some(location)) => location,
        (None, None) => return fail(Exit::Refused, "no ledger to open"),
    };
    let by = by_or_default(args.by.as_deref()).unwrap_or_else(|| "unknown".to_owned());
    let options = UiOptions {
        ledger,
        by,
        older_than_ms,
        clock: clock(),
        start: ui::app::Start {
            view: args.view.as_deref().and_then(ui::keymap::View::from_name),
            focus: args
                .key
                .as_deref()
                .map(|k| send_once::ledger::lone::from_text(k).into_owned()),
        },
        verify,
    };
    match ui::run(options) {
        Ok(ui::Ended::Quit) => Exit::Ok,
        Ok(ui::Ended::Signal(number)) => {
            // Ended as a shell reports a command a signal ended (128 + the signal), once
            // the demo's directory is gone: process::exit runs no destructors.
            drop(demo);
            std::process::exit(128 + number)
        }
        Err(e) => fail(Exit::Refused, e),
    }
}

/// `--verify` and `--check-timeout` checked (bad ones refuse before anything starts),
/// and the config file read. A config file that cannot be used does not refuse: the UI
/// says what is wrong with it.
fn verify_setup(args: &TuiArgs) -> Result<VerifySetup, String> {
    let timeout = super::ledger_arg::limit_flag("--check-timeout", &args.check_timeout)?;
    let every = match &args.verify {
        Some(text) => Some(VerifyCommand {
            argv: split_command("--verify", text)?,
            text: text.clone(),
            from: "--verify".to_owned(),
        }),
        None => None,
    };
    Ok(VerifySetup::load(every, config::config_path(), timeout))
}

/// Whether the default ledger is there to open. One named by `$SEND_ONCE_LEDGER` was
/// given, as good as on the command line, so it counts as there and gets the usual
/// "no such ledger" when it is not.
fn default_exists(location: &LedgerLocation) -> bool {
    if std::env::var_os("SEND_ONCE_LEDGER").is_some_and(|v| !v.is_empty()) {
        return true;
    }
    match location {
        LedgerLocation::Sqlite(path) => path.exists(),
        _ => true,
    }
}

/// What a first-time user needs instead of "no such ledger": how to get one.
fn no_ledger_yet(location: &LedgerLocation) -> String {
    format!(
        "no ledger yet: the default ledger {location} does not exist. To look around, try `send-once tui --demo`; \
         to open a ledger, give its path (`send-once tui LEDGER`) or set SEND_ONCE_LEDGER; \
         `send-once init` makes an empty one (so does the first `send-once run` or `send-once draft submit`)"
    )
}

/// A ledger seeded from assets/demo in a directory of its own (mode 0700, whatever
/// the umask), removed afterwards.
struct DemoLedger {
    _dir: tempfile::TempDir,
    ledger: std::path::PathBuf,
    /// The demo's offline verify command, for `v` (N9).
    verify: VerifyCommand,
}

impl DemoLedger {
    fn create() -> Result<DemoLedger, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("send-once-demo-{}-", std::process::id()))
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| {
                format!(
                    "cannot create a directory in {}: {e}",
                    std::env::temp_dir().display()
                )
            })?;
        let script = dir.path().join("verify.sh");
        std::fs::write(&script, ui::demo::verify_script()?)
            .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
        let demo = DemoLedger {
            ledger: dir.path().join("demo.db"),
            verify: VerifyCommand {
                text: format!("sh {}", script.display()),
                argv: vec!["sh".to_owned(), script.display().to_string()],
                from: "the demo's offline provider".to_owned(),
            },
            _dir: dir,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(ui::demo::seed(&demo.ledger, clock()()))?;
        Ok(demo)
    }
}
