//! Commands on ledger entries: `resolve`, `ls`, `show`, `reset`, `gc`, `decisions`.
//! A key may be given whole or as a unique prefix wherever one entry is meant.

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::{
    Decision, Entry, GcQuery, LedgerLocation, PageQuery, ResolveDetails, Seen, Status,
    UnreadableRow, duration, jsjson,
};
use send_once::text::visible_inline;

use std::ffi::OsString;

use super::ledger_arg::{
    by_or_default, check_by, duration_flag, given_or_default, ledger_or_default, split_ledger,
    text_positional, unsettled, with_ledger,
};
use super::{Exit, fail, note, print_json, print_stdout, store_failure};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Pending,
    Sent,
    Failed,
}

impl From<StatusArg> for Status {
    fn from(s: StatusArg) -> Status {
        match s {
            StatusArg::Pending => Status::Pending,
            StatusArg::Sent => Status::Sent,
            StatusArg::Failed => Status::Failed,
        }
    }
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Only entries with this status
    #[arg(long)]
    pub status: Option<StatusArg>,
    /// At most this many entries
    #[arg(long, default_value_t = 100, allow_negative_numbers = true)]
    pub limit: i64,
    /// Print the entries as a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once show [LEDGER] <KEY> [OPTIONS]")]
pub struct ShowArgs {
    /// [LEDGER] KEY: the ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the key or a prefix of it that matches one key
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub key: String,
    /// Print {"entry": ..., "decisions": [...]} as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once reset [LEDGER] <KEY> [OPTIONS]")]
pub struct ResetArgs {
    /// [LEDGER] KEY: the ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the key or a prefix of it that matches one key
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub key: String,
    /// Also reset an entry recorded as sent (it may then be sent a second time)
    #[arg(long)]
    pub force: bool,
    /// Only if the entry is still in this status (what you checked); refused, naming who
    /// changed it, otherwise
    #[arg(long, value_name = "STATUS")]
    pub expect: Option<StatusArg>,
    /// Only if the entry is still at this attempt (the one you checked); refused, naming
    /// the attempt claimed since, otherwise. Needs --expect
    #[arg(long, value_name = "N", requires = "expect")]
    pub expect_attempt: Option<u64>,
    /// Only if that attempt is still the one claimed at TIME (as `show` prints it, and
    /// the commands send-once prints carry it): attempt numbers start again at 1 once
    /// `gc` removes an entry, and a decision about the old attempt 1 must not land on
    /// the new one. Needs --expect-attempt
    #[arg(long, value_name = "TIME", requires = "expect_attempt")]
    pub expect_claimed_at: Option<String>,
    /// Reset a pending attempt that may still be running (within its claimer's time
    /// limit, its claiming process alive, or unseen: a Node claim, another host), when
    /// you know it has stopped. Without it that is refused, since the next run would
    /// send it alongside; the decision records that you said it
    #[arg(long)]
    pub even_if_running: bool,
    /// Reset an attempt that a verify found at the provider (recorded in the
    /// decision log, for example by the TUI's v), when you know that record is of
    /// another message. Without it that is refused, since the next run would send it
    /// a second time; the decision records that you said it
    #[arg(long)]
    pub even_if_found: bool,
    /// Who is resetting it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Why: what was checked
    #[arg(long)]
    pub note: Option<String>,
    /// Print the entry as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct GcArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Remove entries last updated longer ago than this (30s, 10m, 12h, 2d)
    #[arg(
        long,
        value_name = "DURATION",
        required = true,
        allow_hyphen_values = true
    )]
    pub older_than: String,
    /// Which settled statuses to remove (default: sent,failed). Pending is never removed
    #[arg(long, value_delimiter = ',')]
    pub status: Vec<StatusArg>,
    /// Count what would be removed, and remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DecisionsArgs {
    #[command(subcommand)]
    pub command: Option<super::decisions::DecisionsCommand>,
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Only decisions about this key
    #[arg(long)]
    pub subject: Option<String>,
    /// Print the decisions as a JSON array
    #[arg(long)]
    pub json: bool,
}

/// `[LEDGER] KEY`, by their count.
fn settle_key(positionals: &[OsString]) -> Result<(LedgerLocation, String), String> {
    let (ledger, rest) = split_ledger(positionals, 1);
    let key = match rest {
        [key] => text_positional(key, "key")?,
        _ => return Err("give the key, after the ledger if it is not the default one".to_owned()),
    };
    Ok((given_or_default(ledger)?, key))
}

impl ShowArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.key) = settle_key(&self.positionals)?;
        Ok(())
    }
}

impl ResetArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.key) = settle_key(&self.positionals)?;
        Ok(())
    }
}

pub fn ls(args: &LsArgs) -> Exit {
    let limit = match usize::try_from(args.limit) {
        Ok(n) if n > 0 => n,
        _ => {
            return fail(
                Exit::Refused,
                format!(
                    "--limit {}: give how many entries to list, 1 or more",
                    args.limit
                ),
            );
        }
    };
    let path = match ledger_or_default(args.ledger.as_ref()) {
        Ok(path) => path,
        Err(e) => return fail(Exit::Refused, e),
    };
    let query = PageQuery {
        status: args.status.map(Status::from),
        search: None,
        offset: 0,
        limit,
    };
    // A pending row that cannot be read is left out of the page, but it may be an
    // unknown send: a listing of what is pending must not read as "nothing is".
    let wants_pending = matches!(query.status, None | Some(Status::Pending));
    let (entries, unreadable) = match with_ledger(&path, Access::ReadOnly, async |ledger| {
        let entries = ledger.store().page(&query).await?;
        let unreadable = if wants_pending {
            ledger.store().unreadable_pending().await?
        } else {
            Vec::new()
        };
        Ok((entries, unreadable))
    }) {
        Ok(found) => found,
        Err(exit) => return exit,
    };
    let exit = list_entries(args.json, &entries, limit);
    if !unreadable.is_empty() {
        note(unreadable_note(&unreadable));
    }
    exit
}

/// The most keys a note about unreadable rows names; the audit names them all.
const UNREADABLE_KEYS_NAMED: usize = 5;

fn unreadable_note(rows: &[UnreadableRow]) -> String {
    let mut keys: Vec<String> = rows
        .iter()
        .take(UNREADABLE_KEYS_NAMED)
        .map(|row| visible_inline(&row.key).into_owned())
        .collect();
    if rows.len() > UNREADABLE_KEYS_NAMED {
        keys.push(format!("and {} more", rows.len() - UNREADABLE_KEYS_NAMED));
    }
    format!(
        "{} pending row(s) could not be read ({}): send-once audit names them",
        rows.len(),
        keys.join(", ")
    )
}

fn list_entries(json: bool, entries: &[Entry], limit: usize) -> Exit {
    if json {
        print_json(&Value::Array(entries.iter().map(Entry::to_value).collect()));
        if entries.len() == limit {
            note(format!("the newest {limit} shown; --limit N for more"));
        }
        return Exit::Ok;
    }
    if entries.is_empty() {
        print_stdout("No entries.\n");
        return Exit::Ok;
    }
    let keys: Vec<String> = entries
        .iter()
        .map(|e| visible_inline(e.key()).into_owned())
        .collect();
    let key_width = keys
        .iter()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    let recipients: Vec<String> = entries.iter().map(recipient_cell).collect();
    let to_width = recipients
        .iter()
        .map(|r| r.chars().count())
        .max()
        .unwrap_or(0)
        .max(2);
    let mut out = format!(
        "{:<8} {:>8}  {:<24}  {:<to_width$}  {:<key_width$}  PROVIDER ID / LAST ERROR\n",
        "STATUS", "ATTEMPTS", "CLAIMED", "TO", "KEY"
    );
    for ((entry, key), to) in entries.iter().zip(&keys).zip(&recipients) {
        let detail = match entry.status() {
            Status::Sent => entry.provider_id().map(str::to_owned),
            // Every unknown send's error starts with the same words; the column
            // keeps the part that differs (show and --json have it whole).
            _ => entry.error().map(|e| {
                let e = e
                    .strip_prefix(send_once::ledger::UNKNOWN_PREFIX)
                    .unwrap_or(e);
                one_line(e, 60)
            }),
        };
        let line = format!(
            "{:<8} {:>8}  {:<24}  {to:<to_width$}  {key:<key_width$}  {}",
            entry.status().as_str(),
            attempts_text(entry),
            visible_inline(entry.claimed_at()),
            visible_inline(&detail.unwrap_or_default()),
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    print_stdout(&out);
    // A note, not a row: a pipe reading the table must not get it.
    if entries.len() == limit {
        note(format!("the newest {limit} shown; --limit N for more"));
    }
    Exit::Ok
}

/// The widest recipient `ls` shows; the entry itself keeps all of it.
const RECIPIENT_CELL: usize = 32;

/// Who a send went to (meta `to`), made visible and cut to fit a column; empty
/// when the entry does not say.
fn recipient_cell(entry: &Entry) -> String {
    let to = entry
        .get("meta")
        .and_then(|meta| meta.get("to"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Cut after escaping, so an escape is never split and the width is what shows.
    one_line(&visible_inline(to), RECIPIENT_CELL)
}

fn attempts_text(entry: &Entry) -> String {
    entry
        .get("attempts")
        .map_or_else(|| "?".to_owned(), jsjson::stringify)
}

/// The first line of `text`, cut to `max` characters, for a table cell.
fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or_default();
    let mut cut: String = first.chars().take(max).collect();
    if cut.len() < first.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}

/// The decisions about `key`, and, for a send made from the queue, those about its
/// drafts (AK3).
async fn decisions_of_send(
    ledger: &send_once::ledger::Ledger,
    key: &str,
) -> Result<Vec<Decision>, send_once::ledger::LedgerError> {
    let mut decisions = match ledger.store().decisions(Some(key)).await {
        Ok(d) => d,
        Err(send_once::ledger::StoreError::Unsupported(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    for id in send_once::review::history::drafts_of_key(&decisions) {
        let about = ledger
            .store()
            .decisions(Some(&format!("draft:{id}")))
            .await?;
        decisions.extend(about);
    }
    Ok(decisions)
}

pub fn show(args: &ShowArgs) -> Exit {
    let found = with_ledger(&args.ledger, Access::ReadOnly, async |ledger| {
        let entry = ledger.find(&args.key).await?;
        super::ledger_arg::note_others_beginning(ledger, &args.key, entry.key()).await;
        let decisions = decisions_of_send(ledger, entry.key()).await?;
        Ok((entry, decisions, ledger.now()))
    });
    let (entry, decisions, now) = match found {
        Ok(found) => found,
        Err(exit) => return exit,
    };
    // Whether its attempt may still be running, on the ledger's clock: what a takeover
    // and a person's "failed" are judged by.
    let standing = (entry.status() == Status::Pending)
        .then(|| send_once::ledger::claimer::running(&entry, now));
    // A verify a person asked that found this attempt: it is neither taken over nor
    // marked failed without --even-if-found.
    let found = (entry.status() == Status::Pending)
        .then(|| {
            send_once::ledger::Found::among(&decisions, &entry)
                .or_else(|| send_once::ledger::Found::on_entry(&entry))
        })
        .flatten();
    if args.json {
        let mut out = Map::new();
        out.insert("entry".into(), entry.to_value());
        if let Some(standing) = &standing {
            let mut running = Map::new();
            running.insert("mayStillRun".into(), standing.may_still_run().into());
            running.insert("knownToRun".into(), standing.known_to_run().into());
            running.insert("why".into(), standing.describe().into());
            out.insert("running".into(), Value::Object(running));
        }
        if let Some(found) = &found {
            let mut record = Map::new();
            record.insert("by".into(), found.by.clone().into());
            record.insert("at".into(), found.at.clone().into());
            record.insert("providerId".into(), found.provider_id.clone().into());
            out.insert("found".into(), Value::Object(record));
        }
        out.insert(
            "decisions".into(),
            Value::Array(decisions.iter().map(Decision::to_value).collect()),
        );
        out.insert(
            "history".into(),
            serde_json::to_value(send_once::review::history::send_history(&entry, &decisions))
                .unwrap_or(Value::Null),
        );
        // Each record on the entry with the hash of the decision that wrote it.
        out.insert(
            "decisionHashes".into(),
            Value::Object(send_once::ledger::chain::record_hashes(&entry, &decisions)),
        );
        print_json(&Value::Object(out));
        return Exit::Ok;
    }
    let mut out = String::new();
    let mut row = |name: &str, value: &str| {
        out.push_str(&format!("{name:<12} {}\n", visible_inline(value)));
    };
    row("key", entry.key());
    row("status", entry.status().as_str());
    row("attempts", &attempts_text(&entry));
    row("claimed", entry.claimed_at());
    if let Some(at) = entry.updated_at() {
        row("updated", at);
    }
    if let Some(found) = &found {
        row("found", &found.describe());
    }
    if let Some(standing) = &standing {
        row("running", &standing.describe());
        row(
            "takeover",
            if found.is_some() {
                "not: a verify found it at the provider, so a later \"not there\" does not take it over; record it sent (resolve ... sent), or mark it failed with --even-if-found if the provider's record is of another message"
            } else if standing.holds_off_failed() {
                "not while it may run: run --verify --stale-after waits, and reset or resolve failed need --even-if-running"
            } else if standing.may_still_run() {
                "run --verify --stale-after D takes it over once verify cannot find it and it is older than D, on D alone (nobody can see whether it runs)"
            } else {
                "run --verify --stale-after D takes it over once verify cannot find it and it is older than D"
            },
        );
    }
    if let Some(id) = entry.provider_id() {
        row("provider id", id);
    }
    if let Some(error) = entry.error() {
        row("last error", error);
    }
    if let Some(meta) = entry.meta() {
        for (k, v) in send_once::mcp::held::shown_meta(meta) {
            let v = match v {
                Value::String(s) => s.clone(),
                other => jsjson::stringify(other),
            };
            row("meta", &format!("{k}: {v}"));
        }
    }
    // Who decided what, and the records on the entry the log does not have (the Node
    // library's resolve() writes only the entry), in one time line.
    out.push_str("\nHistory:\n");
    for event in send_once::review::history::send_history(&entry, &decisions) {
        out.push_str(&format!("  {}\n", event.line()));
    }
    print_stdout(&out);
    Exit::Ok
}

fn decision_line(d: &Decision) -> String {
    let line = format!("#{} {} {}", d.id.unwrap_or_default(), d.at, d.summary("->"));
    visible_inline(&line).into_owned()
}

pub fn reset(args: &ResetArgs) -> Exit {
    if let Err(message) = check_by(args.by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    let details = ResolveDetails {
        by: by_or_default(args.by.as_deref()),
        note: args.note.clone(),
        provider_id: None,
        seen: args.expect.map(|status| Seen {
            attempts: args.expect_attempt,
            claimed_at: args.expect_claimed_at.clone(),
            ..Seen::status(Status::from(status))
        }),
        evidence: None,
        even_if_running: args.even_if_running,
        even_if_found: args.even_if_found,
    };
    let done = with_ledger(&args.ledger, Access::ReadWrite, async |ledger| {
        let found = ledger.find(&args.key).await?;
        super::ledger_arg::note_others_beginning(ledger, &args.key, found.key()).await;
        // As `resolve failed` warns: a send of this host whose note is gone (T3).
        let standing = send_once::ledger::claimer::running(&found, ledger.now());
        if matches!(
            standing,
            send_once::ledger::claimer::Running::NoteGone { .. }
        ) {
            note(format!(
                "warning: {}: {}; it is reset on your word",
                visible_inline(found.key()),
                standing.describe()
            ));
        }
        let key = found.key().to_owned();
        Ok(ledger.reset(&key, &details, args.force).await)
    });
    let result = match done {
        Ok(done) => done,
        Err(exit) => return exit,
    };
    let reset = match result {
        Ok(reset) => reset,
        Err(e) => return store_failure(e),
    };
    if args.json {
        print_json(&reset.entry.to_value());
        return Exit::Ok;
    }
    let key = visible_inline(reset.entry.key());
    if reset.changed {
        // The reset record says what it was reset from.
        let was = reset
            .entry
            .get("reset")
            .and_then(|r| r.get("from"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        print_stdout(&format!(
            "Reset {key}: it was {was} and is now failed, so the next attempt for this key will send it.\n"
        ));
    } else {
        print_stdout(&format!(
            "{key} is already failed: the next attempt will send it. Nothing changed.\n"
        ));
    }
    Exit::Ok
}

pub fn gc(args: &GcArgs) -> Exit {
    let older_than_ms = match duration_flag("--older-than", &args.older_than) {
        Ok(ms) => ms,
        Err(message) => return fail(Exit::Refused, message),
    };
    let statuses: Vec<Status> = if args.status.is_empty() {
        vec![Status::Sent, Status::Failed]
    } else {
        args.status.iter().copied().map(Status::from).collect()
    };
    if statuses.contains(&Status::Pending) {
        return fail(
            Exit::Refused,
            "gc never removes pending entries: their outcome is unknown, and removing one would let its key be sent again. Resolve them first (send-once audit)",
        );
    }
    let access = if args.dry_run {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let location = match ledger_or_default(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    let outcome = with_ledger(&location, access, async |ledger| {
        let query = GcQuery {
            statuses: statuses.clone(),
            updated_before_ms: ledger.now() - older_than_ms as i64,
            dry_run: args.dry_run,
        };
        Ok(ledger.store().remove_settled(&query).await?)
    });
    let removed = match outcome {
        Ok(n) => n,
        Err(exit) => return exit,
    };
    let which = statuses
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" or ");
    if args.json {
        let mut out = Map::new();
        out.insert("removed".into(), removed.into());
        out.insert("dryRun".into(), args.dry_run.into());
        out.insert(
            "olderThanMs".into(),
            send_once::ledger::canonical::number_value(older_than_ms),
        );
        out.insert(
            "statuses".into(),
            Value::Array(statuses.iter().map(|s| s.as_str().into()).collect()),
        );
        print_json(&Value::Object(out));
    } else {
        let verb = if args.dry_run {
            "Would remove"
        } else {
            "Removed"
        };
        print_stdout(&format!(
            "{verb} {removed} {which} entr{} last updated more than {} ago. Pending entries are never removed.\n",
            if removed == 1 { "y" } else { "ies" },
            duration::format_duration(older_than_ms)
        ));
    }
    Exit::Ok
}

pub fn decisions(args: &DecisionsArgs) -> Exit {
    if let Some(command) = &args.command {
        return super::decisions::run(command);
    }
    let location = match ledger_or_default(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    let found = with_ledger(&location, Access::ReadOnly, async |ledger| {
        let subject = args
            .subject
            .as_deref()
            .map(|s| send_once::ledger::lone::from_text(s).into_owned());
        let found = ledger.store().decisions(subject.as_deref()).await?;
        // A key as `show` and `resolve` take it: a prefix of one key is that key (K5).
        match subject {
            Some(given) if found.is_empty() && !given.starts_with("draft:") => {
                match ledger.find(&given).await {
                    Ok(entry) if entry.key() != given => {
                        Ok(ledger.store().decisions(Some(entry.key())).await?)
                    }
                    Ok(_) | Err(send_once::ledger::LedgerError::NotFound(_)) => Ok(found),
                    Err(e) => Err(e),
                }
            }
            _ => Ok(found),
        }
    });
    let decisions = match found {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    if args.json {
        print_json(&Value::Array(
            decisions.iter().map(Decision::to_value).collect(),
        ));
        return Exit::Ok;
    }
    if decisions.is_empty() {
        print_stdout("No decisions recorded.\n");
        return Exit::Ok;
    }
    let mut out = String::new();
    for d in &decisions {
        out.push_str(&format!(
            "{}  {}\n",
            decision_line(d),
            visible_inline(&d.subject.text())
        ));
    }
    print_stdout(&out);
    Exit::Ok
}
