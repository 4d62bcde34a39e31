//! `decisions verify`: recomputes the decision log's hash chain, of a ledger or of a
//! `decisions --json` export, and names the first decision that does not match.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use send_once::ledger::chain::{self, Report};
use send_once::ledger::{Access, Decision, LedgerLocation, canonical};
use send_once::text::visible_inline;

use super::ledger_arg::ledger_or_default;
use super::ledger_arg::with_ledger;
use super::{Exit, fail, print_json, print_stdout, read_text_arg};

pub const VERIFY_EXIT_CODES: &str = "\
Exit codes:
  0  the chain is intact (decisions written before the chain are pinned by its genesis)
  1  the chain is broken: the first decision that does not match is named
  2  could not run (no such ledger, a file that is not a decisions export)";

#[derive(Subcommand, Debug)]
pub enum DecisionsCommand {
    /// Recompute the decision log's hash chain and name the first decision that does not match.
    #[command(after_help = VERIFY_EXIT_CODES)]
    Verify(VerifyArgs),
}

impl DecisionsCommand {
    pub fn json(&self) -> bool {
        match self {
            DecisionsCommand::Verify(a) => a.json,
        }
    }
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Verify a file of `send-once decisions --json` output (an export) instead of a ledger
    #[arg(long, value_name = "FILE", conflicts_with = "ledger")]
    pub file: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: &DecisionsCommand) -> Exit {
    match command {
        DecisionsCommand::Verify(args) => verify(args),
    }
}

fn verify(args: &VerifyArgs) -> Exit {
    let report = match &args.file {
        Some(file) => match exported(file) {
            Ok(log) => chain::verify(&log),
            Err(message) => return fail(Exit::Refused, message),
        },
        None => {
            let location = match ledger_or_default(args.ledger.as_ref()) {
                Ok(location) => location,
                Err(message) => return fail(Exit::Refused, message),
            };
            match with_ledger(&location, Access::ReadOnly, async |ledger| {
                Ok(chain::verify_store(ledger.store()).await?)
            }) {
                Ok(report) => report,
                Err(exit) => return exit,
            }
        }
    };
    if args.json {
        print_json(&report_json(&report));
    } else {
        print_stdout(&report_text(&report));
    }
    if report.intact() {
        Exit::Ok
    } else {
        Exit::Failed
    }
}

/// The decisions of a `decisions --json` file, read as the ledger's own JSON is read
/// (lone surrogates kept), so that each hashes as it did when it was written.
fn exported(file: &std::path::Path) -> Result<Vec<Decision>, String> {
    let shown = super::display_path(file);
    let text = read_text_arg(file, "decisions file")?;
    let parsed = canonical::parse_json(&text).map_err(|e| {
        format!("the decisions file {shown} is not JSON ({e}); give the output of `send-once decisions --json`")
    })?;
    let Value::Array(items) = parsed.to_serde() else {
        return Err(format!(
            "the decisions file {shown} is not a JSON array; give the output of `send-once decisions --json`"
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<Decision>(item).map_err(|e| {
                format!(
                    "the decisions file {shown}: item {} is not a decision ({e})",
                    i + 1
                )
            })
        })
        .collect()
}

fn report_json(report: &Report) -> Value {
    let mut out = Map::new();
    out.insert("intact".into(), report.intact().into());
    if let Value::Object(fields) = serde_json::to_value(report).unwrap_or(Value::Null) {
        out.extend(fields);
    }
    Value::Object(out)
}

fn report_text(report: &Report) -> String {
    let mut out = String::new();
    match (&report.broken, &report.head) {
        (Some(broken), _) => {
            out.push_str(&format!("chain BROKEN at {}\n", broken.message));
            out.push_str(&format!(
                "{} decision{} read; the first that does not match is decision {}.\n",
                report.decisions,
                plural(report.decisions),
                broken.id
            ));
        }
        (None, _) if !report.unlogged.is_empty() => {
            let n = report.unlogged.len();
            out.push_str(&format!(
                "chain BROKEN: {n} review-queue row{} name{} no decision in the log ({} decision{} read, each matching its hash):\n",
                plural(n),
                if n == 1 { "s" } else { "" },
                report.decisions,
                plural(report.decisions),
            ));
            for row in &report.unlogged {
                out.push_str(&format!("  {}\n", visible_inline(&row.message)));
            }
            if !report.unbacked.is_empty() {
                out.push_str(&format!(
                    "and {} row{} or record{} the log does not back:\n",
                    report.unbacked.len(),
                    plural(report.unbacked.len()),
                    plural(report.unbacked.len())
                ));
                unbacked_text(report, &mut out);
            }
        }
        (None, _) if !report.unbacked.is_empty() => {
            let n = report.unbacked.len();
            out.push_str(&format!(
                "chain BROKEN: {n} row{} or record{} the log does not back ({} decision{} read, each matching its hash):\n",
                plural(n),
                plural(n),
                report.decisions,
                plural(report.decisions),
            ));
            unbacked_text(report, &mut out);
        }
        (None, Some(head)) => {
            out.push_str(&format!(
                "chain intact: {} decision{}, head {} (decision {})\n",
                report.decisions,
                plural(report.decisions),
                head.hash,
                head.id
            ));
        }
        (None, None) if report.decisions == 0 => out.push_str("chain intact: no decisions yet\n"),
        (None, None) => out.push_str(&format!(
            "no chain yet: {} decision{}, all written before the chain\n",
            report.decisions,
            plural(report.decisions)
        )),
    }
    if report.before_chain > 0 {
        out.push_str(&format!(
            "{} decision{} written before the chain, pinned by its genesis.\n",
            report.before_chain,
            plural(report.before_chain)
        ));
    }
    if report.unpinned > 0 {
        out.push_str(&format!(
            "{} decision{} written before the chain and not pinned yet: the next decision written pins {}.\n",
            report.unpinned,
            plural(report.unpinned),
            if report.unpinned == 1 { "it" } else { "them" }
        ));
    }
    out
}

/// The unbacked rows, one a line, the first [`LISTED`] of them.
fn unbacked_text(report: &Report, out: &mut String) {
    for row in report.unbacked.iter().take(LISTED) {
        out.push_str(&format!("  {}\n", visible_inline(&row.message)));
    }
    if report.unbacked.len() > LISTED {
        out.push_str(&format!(
            "  … and {} more (all of them: --json)\n",
            report.unbacked.len() - LISTED
        ));
    }
}

/// How many unbacked rows the text lists; `--json` gives them all.
const LISTED: usize = 20;

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
