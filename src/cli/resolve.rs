//! `send-once resolve [LEDGER] KEY... sent|failed`: settles unknown sends after a
//! person checked them with the provider. Every key is looked up before anything is
//! written, so a typo in the fifth key of an outage changes nothing; then each key is
//! its own compare-and-set, and one refused does not stop the others.

use std::ffi::{OsStr, OsString};

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::{
    Entry, Ledger, LedgerError, LedgerLocation, ResolveDetails, Resolved, Seen, Status, duration,
    time,
};
use send_once::text::visible_inline;

use super::entries::StatusArg;
use super::ledger_arg::{
    by_or_default, check_by, duration_flag, given_or_default, open_ledger, text_positional,
    unsettled,
};
use super::output::{error_json, fail_with, print_json_array};
use super::{Exit, Kind, Problem, fail, ledger_problem, note, print_json, print_stdout};

pub const RESOLVE_EXIT_CODES: &str = "\
Several keys may be given (an outage): every key is looked up first, and a key that
matches no entry or more than one changes nothing at all. Then each key is settled on
its own, with one line each and a summary; --json prints an array of per-key results
(one key: the entry, as always).

Exit codes:
  0  every key resolved, or it already had that status
  1  refused: no such key, a sent entry marked failed, or changed since --expect
     (with several keys: any one of them)
  2  could not run (missing ledger, not a ledger, an ambiguous key prefix, a key
     given twice, bad flag); nothing was changed";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Settled {
    Sent,
    Failed,
}

impl From<Settled> for Status {
    fn from(s: Settled) -> Status {
        match s {
            Settled::Sent => Status::Sent,
            Settled::Failed => Status::Failed,
        }
    }
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once resolve [LEDGER] <KEY>... <sent|failed> [OPTIONS]")]
pub struct ResolveArgs {
    /// [LEDGER] KEY... STATUS: the ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory; named first, it must exist or end in .db, .sqlite or .jsonl), one or more keys or prefixes that each match one key, and what the provider says happened: sent closes them; failed lets the next attempt send them
    #[arg(value_name = "ARGS", num_args = 2.., required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub keys: Vec<String>,
    /// Whether the first positional could have been a ledger but was taken as a key.
    #[arg(skip)]
    first_may_be_ledger: bool,
    #[arg(skip = Settled::Sent)]
    pub status: Settled,
    /// Who is resolving it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Why, for the next person to read the ledger
    #[arg(long)]
    pub note: Option<String>,
    /// The provider's id for the message, when it went out (one key only)
    #[arg(long)]
    pub provider_id: Option<String>,
    /// Only if the entry is still in this status (what you checked); refused, naming who
    /// changed it, otherwise
    #[arg(long, value_name = "STATUS")]
    pub expect: Option<StatusArg>,
    /// Only if the entry is still at this attempt (the one you checked, as `show` and
    /// the commands send-once prints name it); refused, naming the attempt claimed
    /// since, otherwise. Needs --expect and one key
    #[arg(long, value_name = "N", requires = "expect")]
    pub expect_attempt: Option<u64>,
    /// Only if that attempt is still the one claimed at TIME (as `show` prints it, and
    /// the commands send-once prints carry it): attempt numbers start again at 1 once
    /// `gc` removes an entry, and a decision about the old attempt 1 must not land on
    /// the new one. Needs --expect-attempt
    #[arg(long, value_name = "TIME", requires = "expect_attempt")]
    pub expect_claimed_at: Option<String>,
    /// Mark failed an attempt that may still be running (within its claimer's time
    /// limit, its claiming process alive, or unseen: a Node claim, another host), when
    /// you know it has stopped. Without it that is refused, since the next run would
    /// send it alongside; the decision records that you said it
    #[arg(long)]
    pub even_if_running: bool,
    /// Mark failed an attempt that a verify found at the provider (recorded in the
    /// decision log, for example by the TUI's v), when you know that record is of
    /// another message. Without it that is refused, since the next run would send it
    /// a second time; the decision records that you said it
    #[arg(long)]
    pub even_if_found: bool,
    /// Warn about a pending key claimed less than this long ago whose attempt has not
    /// ended: it may still be sending
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        allow_hyphen_values = true
    )]
    pub older_than: String,
    /// Print the entry as JSON (several keys: an array of per-key results)
    #[arg(long)]
    pub json: bool,
}

const RESOLVE_USAGE: &str = "resolve takes an optional ledger, one or more keys, and sent or failed: send-once resolve [LEDGER] KEY... sent|failed";

/// Whether `arg` is spelled like a ledger (its extension, or a Postgres URL), whatever
/// is on disk: send keys are hex and op ids have no such ending.
fn named_like_a_ledger(arg: &OsStr) -> bool {
    let text = arg.to_string_lossy();
    let lower = text.to_ascii_lowercase();
    [".db", ".sqlite", ".sqlite3", ".jsonl"]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || send_once::ledger::location::is_postgres_url(&text)
}

/// Whether a positional in front of the keys names a ledger rather than a key: one
/// that exists, or is spelled like one. Keys are hex or op ids; ledgers are files.
fn looks_like_ledger(arg: &OsStr) -> bool {
    std::path::Path::new(arg).exists() || named_like_a_ledger(arg)
}

impl ResolveArgs {
    /// Reads `[LEDGER] KEY... STATUS`: the status is the last positional (checked
    /// first, so that a missing one is named as missing), the ledger the first when
    /// there are at least two before the status and it names a ledger.
    pub fn settle(&mut self) -> Result<(), String> {
        let Some((status, rest)) = self.positionals.split_last() else {
            return Err(RESOLVE_USAGE.to_owned());
        };
        self.status = status
            .to_str()
            .and_then(|s| Settled::from_str(s, true).ok())
            .ok_or_else(|| {
                format!(
                    "{} is not a status: give sent or failed, last. {RESOLVE_USAGE}",
                    visible_inline(&status.to_string_lossy())
                )
            })?;
        let (ledger, keys) = match rest {
            [] => return Err(RESOLVE_USAGE.to_owned()),
            // `resolve x.db sent`: a ledger's name and no key, not a key named x.db.
            [only] if named_like_a_ledger(only) => {
                return Err(format!(
                    "{} names a ledger, and no key is given. {RESOLVE_USAGE}",
                    visible_inline(&only.to_string_lossy())
                ));
            }
            [first, more @ ..] if !more.is_empty() && looks_like_ledger(first) => {
                (Some(first), more)
            }
            keys => {
                self.first_may_be_ledger = keys.len() > 1;
                (None, keys)
            }
        };
        self.keys = keys
            .iter()
            .map(|k| text_positional(k, "key"))
            .collect::<Result<_, _>>()?;
        if self.keys.len() > 1 && self.expect_attempt.is_some() {
            return Err(
                "--expect-attempt names one entry's attempt: give it with one key at a time"
                    .to_owned(),
            );
        }
        if self.keys.len() > 1 && self.provider_id.is_some() {
            return Err(
                "--provider-id names one message: give it with one key at a time".to_owned(),
            );
        }
        if let Some(id) = &self.provider_id
            && let Some(why) = send_once::provider::why_not_an_id(id)
        {
            return Err(format!(
                "--provider-id is not an id ({why}): give the provider's id as one short line of plain text"
            ));
        }
        self.ledger = given_or_default(ledger)?;
        Ok(())
    }
}

/// What came of one key.
struct KeyResult {
    given: String,
    key: String,
    result: Result<Resolved, (Exit, Problem)>,
}

pub fn resolve(args: &ResolveArgs) -> Exit {
    if let Err(message) = check_by(args.by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    let older_than_ms = match duration_flag("--older-than", &args.older_than) {
        Ok(ms) => ms,
        Err(message) => return fail(Exit::Refused, message),
    };
    let status = Status::from(args.status);
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let ledger = match open_ledger(&args.ledger, Access::ReadWrite) {
            Ok(ledger) => ledger,
            Err(e) => return super::store_failure(e.into()),
        };
        let entries = match look_up(&ledger, args).await {
            Ok(entries) => entries,
            Err(exit) => return exit,
        };
        for entry in &entries {
            warn_if_in_flight(&ledger, entry, older_than_ms, status, args.even_if_running);
        }
        let mut results = Vec::with_capacity(entries.len());
        for (given, entry) in args.keys.iter().zip(&entries) {
            let details = ResolveDetails {
                by: by_or_default(args.by.as_deref()),
                note: args.note.clone(),
                provider_id: args.provider_id.clone(),
                seen: args.expect.map(|s| Seen {
                    attempts: args.expect_attempt,
                    claimed_at: args.expect_claimed_at.clone(),
                    ..Seen::status(Status::from(s))
                }),
                evidence: None,
                even_if_running: args.even_if_running,
                even_if_found: args.even_if_found,
            };
            let result = ledger
                .resolve(entry.key(), status, &details)
                .await
                .map_err(ledger_problem);
            results.push(KeyResult {
                given: given.clone(),
                key: entry.key().to_owned(),
                result,
            });
        }
        if let [one] = results.as_slice() {
            return report_one(args.json, status, one);
        }
        report_many(args.json, status, &results)
    })
}

/// Finds the entry every key means, before anything is written: any key that matches
/// none or several (or the same entry as another key) stops the command, naming each.
async fn look_up(ledger: &Ledger, args: &ResolveArgs) -> Result<Vec<Entry>, Exit> {
    let mut entries = Vec::with_capacity(args.keys.len());
    let mut problems: Vec<(Exit, Problem)> = Vec::new();
    for (i, given) in args.keys.iter().enumerate() {
        match ledger.find(given).await {
            Ok(entry) => {
                super::ledger_arg::note_others_beginning(ledger, given, entry.key()).await;
                if entries.iter().any(|e: &Entry| e.key() == entry.key()) {
                    problems.push((
                        Exit::Refused,
                        Problem::new(
                            Kind::BadInput,
                            format!(
                                "{} is given twice (as {}); give each key once",
                                entry.key(),
                                given
                            ),
                        )
                        .with("key", Some(entry.key())),
                    ));
                }
                entries.push(entry);
            }
            Err(e @ LedgerError::Store(_)) => return Err(super::store_failure(e)),
            Err(e) => {
                let (exit, mut problem) = ledger_problem(e);
                if i == 0 && args.first_may_be_ledger && problem.kind == Kind::NotFound {
                    problem.message.push_str(&format!(
                        " (it was taken as a key: a ledger named first must exist or end in .db, .sqlite or .jsonl; this ledger is {})",
                        args.ledger
                    ));
                }
                problems.push((exit, problem));
            }
        }
    }
    if problems.is_empty() {
        return Ok(entries);
    }
    if let [(exit, _)] = problems.as_slice() {
        let exit = *exit;
        let Some((_, problem)) = problems.pop() else {
            return Err(exit);
        };
        let mut problem = problem;
        if args.keys.len() > 1 {
            problem.message.push_str("; nothing was resolved");
        }
        return Err(fail_with(exit, problem));
    }
    // Several problems: each on stderr, one JSON object for them all.
    let exit = problems
        .iter()
        .map(|(exit, _)| *exit)
        .max_by_key(|exit| *exit as u8)
        .unwrap_or(Exit::Refused);
    for (_, problem) in &problems {
        note(&problem.message);
    }
    let kind = if problems.iter().all(|(_, p)| p.kind == Kind::NotFound) {
        Kind::NotFound
    } else {
        Kind::BadInput
    };
    let message = format!(
        "{} of {} keys do not match exactly one entry; nothing was resolved",
        problems.len(),
        args.keys.len()
    );
    let keys: Vec<Value> = problems.iter().map(|(_, p)| p.to_json()).collect();
    let problem = Problem::new(kind, message).with("keys", Some(keys));
    Err(fail_with(exit, problem))
}

/// A pending entry claimed moments ago whose attempt has not ended (no error
/// recorded) may still be sending: settling it now may be contradicted by its send.
fn warn_if_in_flight(
    ledger: &Ledger,
    entry: &Entry,
    older_than_ms: f64,
    to: Status,
    even_if_running: bool,
) {
    use send_once::ledger::claimer::Running;
    if entry.status() != Status::Pending || entry.error().is_some() {
        return;
    }
    let standing = send_once::ledger::claimer::running(entry, ledger.now());
    // A failed it refuses says why itself; a warning before it would be a second
    // story (hostile round 44: AL1).
    if to == Status::Failed && standing.known_to_run() && !even_if_running {
        return;
    }
    // A failed about a send of this host whose note is gone lets the next run send
    // while it may still run: said in its own words, so the person knows.
    if to == Status::Failed && matches!(standing, Running::NoteGone { .. }) {
        note(format!(
            "warning: {}: {}; it is settled on your word",
            visible_inline(entry.key()),
            standing.describe()
        ));
    }
    let Some(claimed) = time::parse_date(entry.claimed_at()) else {
        return;
    };
    let age = (ledger.now() - claimed).max(0);
    if (age as f64) < older_than_ms {
        // Who records a completion: the claimer, while it is there to (AL1: after a
        // kill -9 of the proxy, nothing was, and the retry sent it again).
        let completes = match standing {
            Running::ClaimerGone { .. } => {
                "Its claiming process has ended on this host, and the send with it".to_owned()
            }
            Running::SendAlive { pid, .. }
            | Running::NoteGone { pid }
            | Running::WithinLimit {
                claimer_gone: Some(pid),
                ..
            } => format!(
                "It may still be sending, and its claiming process {pid} has ended: if it completes, nothing is left to record it, and the entry stays as decided now{}",
                if to == Status::Failed {
                    " (a next attempt would send it again)"
                } else {
                    ""
                }
            ),
            Running::Unseen { .. } => "It may still be sending; whether its claimer is there to record a completion cannot be seen from here".to_owned(),
            _ => "It may still be sending. If it completes, its claimer records it as sent whatever is decided now".to_owned(),
        };
        note(format!(
            "warning: {} was claimed {} ago and its attempt has not ended. {completes}; check with the provider after a few minutes",
            visible_inline(entry.key()),
            duration::format_duration(age as f64)
        ));
    }
}

fn settled_line(status: Status, resolved: &Resolved) -> String {
    let key = visible_inline(resolved.entry.key());
    if resolved.changed {
        let next = match status {
            Status::Failed => "The next attempt for this key will send it.",
            _ => "It will not be sent again.",
        };
        format!("Resolved {key} as {}. {next}", status.as_str())
    } else {
        format!("{key} was already {}. Nothing changed.", status.as_str())
    }
}

/// One key: the entry (or the error) as `resolve` has always printed it.
fn report_one(json: bool, status: Status, one: &KeyResult) -> Exit {
    match &one.result {
        Ok(resolved) if json => {
            print_json(&resolved.entry.to_value());
            Exit::Ok
        }
        Ok(resolved) => {
            print_stdout(&format!("{}\n", settled_line(status, resolved)));
            Exit::Ok
        }
        Err((exit, problem)) => fail_with(*exit, problem.clone()),
    }
}

/// Several keys: one line (or JSON object) per key, a summary, and exit 1 if any was
/// refused.
fn report_many(json: bool, status: Status, results: &[KeyResult]) -> Exit {
    let refused: Vec<&KeyResult> = results.iter().filter(|r| r.result.is_err()).collect();
    let changed = results
        .iter()
        .filter(|r| r.result.as_ref().is_ok_and(|r| r.changed))
        .count();
    let unchanged = results.len() - refused.len() - changed;
    let exit = results
        .iter()
        .filter_map(|r| r.result.as_ref().err().map(|(exit, _)| *exit))
        .max_by_key(|exit| *exit as u8)
        .unwrap_or(Exit::Ok);
    if json {
        print_json_array(results.iter().map(|r| {
            let mut one = Map::new();
            one.insert("key".into(), r.key.clone().into());
            one.insert("given".into(), r.given.clone().into());
            match &r.result {
                Ok(resolved) => {
                    let outcome = if resolved.changed {
                        "changed"
                    } else {
                        "unchanged"
                    };
                    one.insert("outcome".into(), outcome.into());
                    one.insert("entry".into(), resolved.entry.to_value());
                }
                Err((exit, problem)) => {
                    one.insert("outcome".into(), "refused".into());
                    if let Value::Object(error) = error_json(*exit, problem) {
                        one.extend(error);
                    }
                }
            }
            Value::Object(one)
        }));
    } else {
        let mut out = String::new();
        for r in results {
            match &r.result {
                Ok(resolved) => out.push_str(&settled_line(status, resolved)),
                Err((_, problem)) => out.push_str(&format!("Refused: {}", problem.message)),
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "{} of {} settled as {} ({changed} changed, {unchanged} already {}); {} refused.\n",
            results.len() - refused.len(),
            results.len(),
            status.as_str(),
            status.as_str(),
            refused.len()
        ));
        print_stdout(&out);
    }
    for r in &refused {
        if let Err((_, problem)) = &r.result {
            note(format!("refused: {}", problem.message));
        }
    }
    exit
}
