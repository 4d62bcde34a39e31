//! `send-once tui [LEDGER] [--by NAME] [--older-than D] [--demo]`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use send_once::ledger::duration;
use send_once::ui::{self, UiOptions};

use super::ledger_arg::{clock, current_user, ledger_or_default};
use super::{Exit, fail};

#[derive(Args, Debug)]
pub struct TuiArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<PathBuf>,
    /// Your name on decisions (default: $SEND_ONCE_USER, else the OS user)
    #[arg(long)]
    pub by: Option<String>,
    /// Unknown sends claimed more recently than this are marked as maybe still in flight
    #[arg(long, default_value = "5m", allow_hyphen_values = true)]
    pub older_than: String,
}

pub fn tui(args: &TuiArgs, headless: bool) -> Exit {
    if headless {
        return fail(
            Exit::Refused,
            "--headless: the tui is the one command that needs a terminal; use audit, ls or approvals instead",
        );
    }
    let older_than_ms = match duration::parse_duration(&args.older_than) {
        Ok(ms) => ms,
        Err(e) => return fail(Exit::Refused, format!("--older-than: {e}")),
    };
    let ledger = match ledger_or_default(args.ledger.as_deref()) {
        Ok(path) => path,
        Err(e) => return fail(Exit::Refused, e),
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return fail(
            Exit::Refused,
            "the tui needs a terminal; for scripts use send-once audit, ls or approvals",
        );
    }
    let by = args
        .by
        .clone()
        .or_else(|| {
            std::env::var("SEND_ONCE_USER")
                .ok()
                .filter(|u| !u.is_empty())
        })
        .or_else(current_user)
        .unwrap_or_else(|| "unknown".to_owned());
    let options = UiOptions {
        ledger,
        by,
        older_than_ms,
        clock: clock(),
    };
    match ui::run(options) {
        Ok(()) => Exit::Ok,
        Err(e) => fail(Exit::Refused, e),
    }
}
