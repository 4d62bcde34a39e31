//! `send-once init [LEDGER]`: an empty ledger, before anything is sent. Until now a
//! ledger came into being only with its first entry (`run`, `draft submit`), so a
//! cron `audit` or the TUI pointed at a new deployment found "no such ledger".

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::LedgerLocation;
use send_once::open::{Init, Open};

use super::ledger_arg::ledger_to_create;
use super::output::fail_with;
use super::{Exit, fail, print_json, print_stdout, runtime, store_problem};

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The ledger to create: a path (a name ending in .jsonl is a JSON Lines ledger, anything else SQLite) (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Print what was made as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn init(args: &InitArgs) -> Exit {
    let location = match ledger_to_create(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(e) => return fail(Exit::Refused, e),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    let done = match runtime.block_on(location.init()) {
        Ok(done) => done,
        Err(e) => return fail_with(Exit::Refused, store_problem(&e)),
    };
    let created = done == Init::Made;
    if args.json {
        let mut out = Map::new();
        out.insert("ledger".into(), location.to_string().into());
        out.insert("kind".into(), location.kind().into());
        out.insert("created".into(), created.into());
        print_json(&Value::Object(out));
    } else {
        let what = location.kind_name();
        let said = if created {
            format!("created an empty {what} ledger at {location}\n")
        } else {
            format!("{location} is already a ledger ({what}); nothing was changed\n")
        };
        print_stdout(&said);
    }
    Exit::Ok
}
