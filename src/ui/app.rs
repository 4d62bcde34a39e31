//! The UI's state and its one way to change: `App::update(action)`, which returns the
//! effects to run and does no IO. Every key press is testable without a terminal.

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use tui_input::Input;
use tui_input::backend::crossterm::EventHandler;

use super::action::{Action, Effect, Gone, Outcome};
use super::config::VerifySetup;
use super::keymap::{self, Command, View, command_for};
use super::view::{self, Hit, MIN_HEIGHT, MIN_WIDTH};
use crate::ledger::decision::Decision;
use crate::ledger::{Census, Entry, PageQuery, Seen, Status, UnreadableRow, time};
use crate::review::Draft;
use crate::review::drift::DriftStatus;

pub use super::forms::{Confirm, Field, Form, FormKind, Settle, short_key};
use super::forms::{field, submit};
pub use super::state::{Loaded, Sort, StatusLine, ViewState};
use super::state::{
    decision_matches, draft_matches, entry_matches, loaded, sort_drafts, sort_entries,
};
pub use super::verify::{RowMark, Verified, Verifying};

/// Rows of the ledger view loaded at a time.
pub const LEDGER_PAGE: usize = 200;

/// The newest decision of a loaded log: its id and hash.
type Newest = (Option<i64>, Option<String>);

/// A chain checked less than this long ago (ms) is checked again on a new load of the
/// log only when the log's newest decision is another one; else at the next tick past
/// it.
pub const CHAIN_RECHECK_MS: i64 = 5_000;

/// The newest decisions the Decisions view holds.
pub const DECISIONS_SHOWN: usize = 2000;

/// How long a status message stays, unless a key clears it first. One that says
/// something was refused or failed stays until a key: a person must not miss that
/// their decision did not apply.
pub const STATUS_FADE_MS: i64 = 6000;

/// The most distinct refusal reasons a bulk decision's status line spells out.
const BATCH_REASONS_SHOWN: usize = 2;

/// The status while a confirmed decision is written (a busy ledger can take seconds):
/// neither a tick nor a cross, because nothing is decided yet.
pub const WORKING: &str = "Working… (writing to the ledger)";

/// Said wherever an edit is kept for another `e`: the way back to the draft's own
/// payload, so that a text that cannot be saved never traps the person.
pub const START_AFRESH: &str = " E starts from the draft instead.";

/// An edit that was not saved and waits for another try: `e` on its draft opens it
/// again, judged against the draft as it was when the edit began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptEdit {
    /// The draft's send key when the edit began: the edit is never opened for another
    /// draft that has the same id (in a file opened since).
    pub key: String,
    pub revision: i64,
    pub version: i64,
    pub text: String,
}

/// One thing `y` can copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyChoice {
    pub key: char,
    pub what: &'static str,
    pub text: String,
}

#[derive(Clone, Debug)]
pub enum Overlay {
    Help,
    Form(Form),
    Confirm(Confirm),
    /// The `:` command line.
    Command(Input),
    /// What `y` can copy, when there is more than one thing.
    Copy(Vec<CopyChoice>),
}

pub struct Options {
    pub ledger_label: String,
    pub by: String,
    pub older_than_ms: f64,
    /// Why there is no review queue (a JSON Lines ledger), if there is none.
    pub no_queue: Option<String>,
    pub now: i64,
}

/// Where the UI opens: `tui --view`, `tui --key`.
#[derive(Clone, Debug, Default)]
pub struct Start {
    pub view: Option<View>,
    /// A key or draft id to select once the lists are loaded.
    pub focus: Option<String>,
}

pub struct App {
    pub view: View,
    pub now: i64,
    pub size: (u16, u16),
    pub ledger_label: String,
    pub by: String,
    pub older_than_ms: f64,
    pub no_queue: Option<String>,
    pub approvals: Loaded<Vec<Draft>>,
    pub unknown: Loaded<Vec<Entry>>,
    pub ledger: Loaded<Vec<Entry>>,
    pub decisions: Loaded<Vec<Decision>>,
    /// What verifying the decision log's hash chain found, checked after loads of the
    /// log (see [`CHAIN_RECHECK_MS`]).
    pub chain: Loaded<crate::ledger::chain::Report>,
    /// When the chain was last asked to be checked, and the log's newest decision (id
    /// and hash) then.
    chain_checked: Option<(i64, Option<Newest>)>,
    /// The log was loaded since the chain was checked, too soon to check it again.
    chain_owed: bool,
    pub counts: Option<Census>,
    /// Why the counts could not be had, when they could not.
    pub counts_error: Option<String>,
    /// The pending rows that could not be read, as the last read of the pending rows
    /// found them: put on the counts whichever of the two arrives first.
    unreadable_pending: Option<Vec<UnreadableRow>>,
    /// Each view's own selection, filter, marks and sort, in `View::ALL`'s order.
    pub views: [ViewState; 4],
    /// The filter being typed, when `/` was pressed: it applies as it is typed.
    pub filter_input: Option<Input>,
    pub ledger_status: Option<Status>,
    pub ledger_offset: usize,
    /// How far the detail pane is scrolled (J/K); back to the top on a new selection.
    pub detail_scroll: u16,
    /// The revision the selected draft's payload is compared with (`[`/`]`); `None`
    /// is the default: the approved one when it was edited after approval, else the
    /// previous one.
    pub diff_base: Option<i64>,
    pub overlay: Option<Overlay>,
    /// The decisions about the selected item (its subject), for its history pane.
    pub history: Option<(String, Loaded<Vec<Decision>>)>,
    /// The ledger changed since the history was loaded: ask again (what was loaded
    /// shows until the answer comes).
    history_stale: bool,
    /// The Ledger's search was typed since it was last asked for.
    ledger_search_due: bool,
    /// Every revision of drafts `[` reached past what the queue holds, by id, with the
    /// version they were loaded at: kept across reloads while the draft is unchanged.
    pub all_revisions: std::collections::HashMap<i64, (i64, Vec<crate::review::Revision>)>,
    /// What the last action did, or why it was refused.
    pub status: Option<StatusLine>,
    /// The ledger's path no longer holds the file opened: decisions are off.
    pub ledger_gone: Option<Gone>,
    /// The open form or confirmation was made on a ledger file since replaced: it
    /// cannot be confirmed.
    pub overlay_stale: bool,
    /// Where to open, until it has been applied (or a key was pressed first).
    pub start: Start,
    /// Which verify command `v` runs for each channel (`--verify`, the config file).
    pub verify: VerifySetup,
    /// What `v` is doing and what it was told.
    pub verifying: Verifying,
    /// Edits not saved (not JSON, a ledger that could not take them), by draft id.
    pub kept_edits: std::collections::HashMap<i64, KeptEdit>,
    /// Kept edits of drafts in a ledger file no longer opened (another file was
    /// opened at the path): never opened by `e` again, but written to files when the
    /// UI ends, with the rest, so nothing typed is lost.
    pub set_aside: Vec<(i64, KeptEdit)>,
    /// `E` dropped the kept edit of this draft: the edit's outcome says so.
    restarted: Option<i64>,
    /// Why every write to the ledger opened would be refused (a read-only filesystem,
    /// a disk full when it was opened), when it would: `e` says so before the editor
    /// opens, rather than after the person typed what could not be saved.
    pub writes_refused: Option<String>,
    pub quit: bool,
}

/// The pending entry's attempt has not ended (no error is recorded for it) and it was
/// claimed less than `older_than_ms` ago: it may still be sending. A claim time that
/// cannot be read, or lies further ahead than that, says nothing of the kind: such a
/// row is an unknown send until a person checks it (see `ledger::placed_in_time`).
pub fn in_flight(entry: &Entry, now: i64, older_than_ms: f64) -> bool {
    entry.status() == Status::Pending
        && entry.error().is_none()
        && crate::ledger::placed_in_time(entry, now, older_than_ms)
        && time::parse_date(entry.claimed_at()).is_some_and(|at| (now - at) as f64 <= older_than_ms)
}

/// Who must still approve a draft another approval by this person would not count
/// toward: "a second person" while one more is needed, else how many.
fn others_must_approve(missing: i64) -> String {
    if missing > 1 {
        format!("{missing} more people must approve it")
    } else {
        "one more person must approve it".to_owned()
    }
}

/// Why a bulk decision opened nothing: no marked row is shown.
fn hidden_marks(hidden: usize) -> String {
    if hidden == 0 {
        return "No marked row is listed any more (each was decided or changed since): Esc clears the marks.".to_owned();
    }
    format!(
        "The {hidden} marked row(s) are hidden by the filter, and a decision applies to what is shown: clear the filter to see them, or Esc to clear the marks."
    )
}

/// Said in a bulk form's title when marked rows are hidden by the filter.
fn left_hidden(hidden: usize) -> String {
    match hidden {
        0 => String::new(),
        n => format!(" ({n} marked but hidden by the filter are left)"),
    }
}

/// Who an entry went to and what it is for, from its meta, else its short key.
pub fn entry_who(entry: &Entry) -> String {
    crate::text::who_and_what(entry.meta()).unwrap_or_else(|| short_key(entry.key()))
}

impl App {
    pub fn new(options: Options) -> App {
        App {
            view: View::Approvals,
            now: options.now,
            size: (100, 30),
            ledger_label: options.ledger_label,
            by: options.by,
            older_than_ms: options.older_than_ms,
            no_queue: options.no_queue,
            approvals: Loaded::Loading,
            unknown: Loaded::Loading,
            ledger: Loaded::Loading,
            decisions: Loaded::Loading,
            chain: Loaded::Loading,
            chain_checked: None,
            chain_owed: false,
            counts: None,
            counts_error: None,
            unreadable_pending: None,
            views: Default::default(),
            filter_input: None,
            ledger_status: None,
            ledger_offset: 0,
            detail_scroll: 0,
            diff_base: None,
            overlay: None,
            history: None,
            history_stale: false,
            ledger_search_due: false,
            all_revisions: Default::default(),
            status: None,
            ledger_gone: None,
            overlay_stale: false,
            start: Start::default(),
            verify: VerifySetup::none(crate::provider::Limit::new(
                crate::provider::DEFAULT_CHECK_TIMEOUT,
            )),
            verifying: Verifying::default(),
            kept_edits: Default::default(),
            set_aside: Vec::new(),
            restarted: None,
            writes_refused: None,
            quit: false,
        }
    }

    /// The verify commands `v` runs. What is wrong with the config file, if anything,
    /// is said at once (and stays in the help).
    pub fn with_verify(mut self, verify: VerifySetup) -> App {
        if let Some(problem) = &verify.problem {
            let problem = problem.clone();
            self.say(&problem, false);
        }
        self.verify = verify;
        self
    }

    /// Opens on `start.view`, and selects `start.focus` once it is loaded.
    pub fn with_start(mut self, start: Start) -> App {
        if let Some(view) = start.view {
            self.view = view;
        }
        self.start = start;
        self
    }

    pub fn state(&self, view: View) -> &ViewState {
        &self.views[view.index()]
    }

    pub fn state_mut(&mut self, view: View) -> &mut ViewState {
        &mut self.views[view.index()]
    }

    /// The filter text of `view`.
    pub fn filter(&self, view: View) -> &str {
        &self.state(view).filter
    }

    /// The terminal is smaller than anything is drawn at: the screen shows only how big
    /// it needs to be, so no key may act on what is not shown.
    pub fn too_small(&self) -> bool {
        self.size.0 < MIN_WIDTH || self.size.1 < MIN_HEIGHT
    }

    /// What became of the ledger's file ("ledger X was …"), when it is no longer the
    /// one opened.
    fn gone_reason(&self) -> Option<String> {
        let label = &self.ledger_label;
        self.ledger_gone.as_ref().map(|gone| match gone {
            Gone::Deleted => format!("ledger {label} was deleted or moved away"),
            Gone::Replaced => format!("ledger {label} was replaced by another file"),
            Gone::Unusable(why) => format!("ledger {label} cannot be used ({why})"),
        })
    }

    /// The banner shown over the views while the ledger is gone.
    pub fn banner(&self) -> Option<String> {
        self.gone_reason().map(|reason| {
            format!("The {reason}; decisions are off until it is back. What shows is what it held.")
        })
    }

    /// Why a decision cannot be made now, if it cannot.
    fn decisions_off(&self) -> Option<String> {
        if let Some(reason) = self.gone_reason() {
            return Some(format!("Refused, nothing was written: the {reason}."));
        }
        if self.overlay_stale {
            return Some(format!(
                "Refused, nothing was written: the ledger {} was replaced while this was open. Look at it again and decide anew.",
                self.ledger_label
            ));
        }
        None
    }

    /// Whether every view's data (and the counts) has arrived.
    pub fn loaded(&self) -> bool {
        let queue = self.no_queue.is_some() || !matches!(self.approvals, Loaded::Loading);
        queue
            && !matches!(self.unknown, Loaded::Loading)
            && !matches!(self.ledger, Loaded::Loading)
            && !matches!(self.decisions, Loaded::Loading)
            && (self.counts.is_some() || self.counts_error.is_some())
    }

    /// What to load when the UI opens.
    pub fn start(&self) -> Vec<Effect> {
        self.reload()
    }

    fn reload(&self) -> Vec<Effect> {
        let mut effects = Vec::new();
        // What the path holds now is not the ledger shown; what was loaded stays, under
        // the banner, until a ledger is back.
        if self.ledger_gone.is_some() {
            return effects;
        }
        if self.no_queue.is_none() {
            effects.push(Effect::LoadApprovals);
        }
        effects.push(Effect::LoadUnknown);
        effects.push(Effect::LoadLedger(self.ledger_query()));
        effects.push(Effect::LoadCounts);
        effects.push(Effect::LoadDecisions);
        effects
    }

    /// Who and what a subject (a key, or `draft:ID`) is, from what is loaded, if any
    /// list holds it.
    pub fn who_of(&self, subject: &str) -> Option<String> {
        if let Some(id) = subject.strip_prefix("draft:") {
            return self
                .approvals
                .ready()?
                .iter()
                .find(|d| d.id.to_string() == id)
                .and_then(Draft::recipient_and_intent);
        }
        [&self.unknown, &self.ledger]
            .into_iter()
            .filter_map(Loaded::ready)
            .flatten()
            .find(|e| e.key() == subject)
            .map(entry_who)
            .filter(|who| *who != short_key(subject))
    }

    /// What the selected row's history is about: a key, or `draft:ID`.
    pub fn selected_subject(&self) -> Option<String> {
        match self.view {
            View::Approvals => self.selected_draft().map(|d| format!("draft:{}", d.id)),
            View::Unknown => self.selected_unknown().map(|e| e.key().to_owned()),
            View::Ledger => self.selected_entry().map(|e| e.key().to_owned()),
            View::Decisions => None,
        }
    }

    /// The decisions about `subject`, oldest first: its own load when it has come,
    /// else what the Decisions view holds of it.
    pub fn history_of(&self, subject: &str) -> Vec<Decision> {
        match &self.history {
            Some((s, Loaded::Ready(decisions))) if s == subject => decisions.clone(),
            _ => self.decisions_about(subject).into_iter().cloned().collect(),
        }
    }

    /// The load of the selected item's history, when the selection moved to another
    /// item since it was last asked. The runtime asks after each batch of actions, so
    /// `update`'s effects stay what the person's keys and the loads called for.
    pub fn history_effect(&mut self) -> Option<Effect> {
        if self.ledger_gone.is_some() {
            return None;
        }
        let subject = self.selected_subject();
        let current = self.history.as_ref().map(|(s, _)| s.clone());
        if subject == current {
            if !std::mem::take(&mut self.history_stale) {
                return None;
            }
            return subject.map(Effect::LoadHistory);
        }
        self.history_stale = false;
        match subject {
            Some(subject) => {
                self.history = Some((subject.clone(), Loaded::Loading));
                Some(Effect::LoadHistory(subject))
            }
            None => {
                self.history = None;
                None
            }
        }
    }

    pub fn ledger_query(&self) -> PageQuery {
        let search = self.filter(View::Ledger);
        PageQuery {
            status: self.ledger_status,
            search: (!search.is_empty()).then(|| search.to_owned()),
            offset: self.ledger_offset,
            limit: LEDGER_PAGE,
        }
    }

    /// The drafts the Approvals view lists, after its filter and sort.
    pub fn visible_drafts(&self) -> Vec<&Draft> {
        let state = self.state(View::Approvals);
        let mut drafts: Vec<&Draft> = self
            .approvals
            .ready()
            .map(|drafts| {
                drafts
                    .iter()
                    .filter(|d| draft_matches(d, &state.filter))
                    .collect()
            })
            .unwrap_or_default();
        sort_drafts(&mut drafts, state.sort);
        drafts
    }

    /// The pending entries the Unknown view lists, after its filter and sort.
    pub fn visible_unknown(&self) -> Vec<&Entry> {
        let state = self.state(View::Unknown);
        let mut entries: Vec<&Entry> = self
            .unknown
            .ready()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| entry_matches(e, &state.filter))
                    .collect()
            })
            .unwrap_or_default();
        sort_entries(&mut entries, state.sort);
        entries
    }

    /// The ledger page (the store searched it: key, recipient, intent, meta, error).
    pub fn visible_ledger(&self) -> Vec<&Entry> {
        self.ledger
            .ready()
            .map(|entries| entries.iter().collect())
            .unwrap_or_default()
    }

    /// The decision log, newest first, after its filter.
    pub fn visible_decisions(&self) -> Vec<&Decision> {
        let filter = self.filter(View::Decisions);
        self.decisions
            .ready()
            .map(|all| all.iter().filter(|d| decision_matches(d, filter)).collect())
            .unwrap_or_default()
    }

    pub fn row_count(&self, view: View) -> usize {
        match view {
            View::Approvals => self.visible_drafts().len(),
            View::Unknown => self.visible_unknown().len(),
            View::Ledger => self.visible_ledger().len(),
            View::Decisions => self.visible_decisions().len(),
        }
    }

    pub fn selected(&self, view: View) -> usize {
        self.state(view).selected
    }

    pub fn selected_draft(&self) -> Option<&Draft> {
        self.visible_drafts()
            .get(self.selected(View::Approvals))
            .copied()
    }

    pub fn selected_unknown(&self) -> Option<&Entry> {
        self.visible_unknown()
            .get(self.selected(View::Unknown))
            .copied()
    }

    pub fn selected_entry(&self) -> Option<&Entry> {
        self.visible_ledger()
            .get(self.selected(View::Ledger))
            .copied()
    }

    pub fn selected_decision(&self) -> Option<&Decision> {
        self.visible_decisions()
            .get(self.selected(View::Decisions))
            .copied()
    }

    /// The decisions about one subject (a key, or a draft's id), oldest first, from
    /// the log the Decisions view holds.
    pub fn decisions_about(&self, subject: &str) -> Vec<&Decision> {
        let mut found: Vec<&Decision> = self
            .decisions
            .ready()
            .map(|all| all.iter().filter(|d| d.subject == subject).collect())
            .unwrap_or_default();
        found.reverse();
        found
    }

    /// Its attempt has not ended and it was claimed recently: maybe still sending.
    pub fn maybe_in_flight(&self, entry: &Entry) -> bool {
        in_flight(entry, self.now, self.older_than_ms)
    }

    /// Rows a page key moves by: what fits in the list.
    fn page_rows(&self) -> usize {
        usize::from(self.size.1.saturating_sub(12)).max(1)
    }

    /// Whether the status line says a decision is still being written.
    pub fn working(&self) -> bool {
        matches!(&self.status, Some(s) if s.text == WORKING)
    }

    pub(super) fn say(&mut self, message: &str, ok: bool) {
        self.status = Some(StatusLine {
            text: message.to_owned(),
            ok,
            at: self.now,
        });
    }

    /// A warning that stays until the next message: one that must not fade before a
    /// person has read it.
    pub(super) fn say_until_next(&mut self, message: &str) {
        self.status = Some(StatusLine {
            text: message.to_owned(),
            ok: false,
            // Never old enough to fade; the next message replaces it.
            at: i64::MAX,
        });
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Action::Key(_) => Vec::new(),
            Action::Mouse(mouse) => {
                if self.overlay.is_some() || self.too_small() {
                    return Vec::new();
                }
                self.mouse(mouse.kind, mouse.column, mouse.row)
            }
            Action::Resize(w, h) => {
                self.size = (w, h);
                Vec::new()
            }
            Action::Tick(now) => {
                self.now = now;
                let mut effects = Vec::new();
                if std::mem::take(&mut self.ledger_search_due) {
                    let text = self.filter(View::Ledger).to_owned();
                    let view = self.view;
                    self.view = View::Ledger;
                    effects = self.set_filter(text);
                    self.view = view;
                }
                if let Some(status) = &self.status
                    && status.ok
                    && !self.working()
                    && now - status.at >= STATUS_FADE_MS
                {
                    self.status = None;
                }
                if self.chain_owed
                    && self
                        .chain_checked
                        .as_ref()
                        .is_none_or(|(at, _)| now - at >= CHAIN_RECHECK_MS)
                {
                    self.chain_owed = false;
                    if let Some((at, _)) = &mut self.chain_checked {
                        *at = now;
                    }
                    effects.push(Effect::CheckChain);
                }
                effects
            }
            Action::Changed => {
                // The selected item's history is asked for again with the rest.
                self.history_stale = true;
                self.reload()
            }
            Action::LedgerGone(gone) => {
                self.ledger_gone = Some(gone);
                Vec::new()
            }
            Action::LedgerBack { reopened } => {
                let was_gone = self.ledger_gone.take().is_some();
                if reopened {
                    // Answers were about the entries of the file no longer opened, and
                    // so were the edits kept for another try: set aside, never opened
                    // for this file's drafts, and written to files when the UI ends.
                    self.verifying.answers.clear();
                    let mut kept: Vec<(i64, KeptEdit)> = self.kept_edits.drain().collect();
                    kept.sort_by_key(|(id, _)| *id);
                    self.set_aside.extend(kept);
                    self.overlay_stale = self.overlay_stale
                        || matches!(self.overlay, Some(Overlay::Form(_) | Overlay::Confirm(_)));
                    self.say(
                        &format!(
                            "The ledger {} was replaced by another file, now opened: what shows is what it holds.",
                            self.ledger_label
                        ),
                        true,
                    );
                } else if was_gone {
                    self.say(&format!("The ledger {} is back.", self.ledger_label), true);
                }
                self.reload()
            }
            // Loads answered after the ledger went are of a file no longer at the path.
            Action::ApprovalsLoaded(_)
            | Action::UnknownLoaded(_)
            | Action::PendingLoaded { .. }
            | Action::LedgerLoaded { .. }
            | Action::CountsLoaded(_)
            | Action::DecisionsLoaded(_)
            | Action::ChainChecked(_)
            | Action::HistoryLoaded { .. }
            | Action::DraftLoaded { .. }
                if self.ledger_gone.is_some() =>
            {
                Vec::new()
            }
            Action::ApprovalsLoaded(result) => {
                let keep = self.selected_draft().map(|d| d.id);
                self.approvals = loaded(result.map(|drafts| self.with_all_revisions(drafts)));
                if let Some(id) = keep
                    && let Some(i) = self.visible_drafts().iter().position(|d| d.id == id)
                {
                    self.state_mut(View::Approvals).selected = i;
                }
                self.prune_marks();
                self.after_load()
            }
            Action::PendingLoaded {
                entries,
                unreadable,
            } => {
                if let Some(census) = &mut self.counts {
                    census.unreadable = unreadable.clone();
                }
                self.unreadable_pending = Some(unreadable);
                self.update(Action::UnknownLoaded(entries))
            }
            Action::UnknownLoaded(result) => {
                let keep = self.selected_unknown().map(|e| e.key().to_owned());
                self.unknown = loaded(result);
                if let Some(key) = keep
                    && let Some(i) = self.visible_unknown().iter().position(|e| e.key() == key)
                {
                    self.state_mut(View::Unknown).selected = i;
                }
                self.prune_marks();
                self.prune_verified();
                self.after_load()
            }
            Action::LedgerLoaded { query, result } => {
                // An answer to a query no longer asked (the filter changed since) is
                // dropped; the newer one is on its way.
                if query != self.ledger_query() {
                    return Vec::new();
                }
                let keep = self.selected_entry().map(|e| e.key().to_owned());
                self.ledger = loaded(result);
                if let Some(key) = keep
                    && let Some(i) = self.visible_ledger().iter().position(|e| e.key() == key)
                {
                    self.state_mut(View::Ledger).selected = i;
                }
                self.after_load()
            }
            Action::DecisionsLoaded(result) => {
                // At the top of a newest-first log the selection stays at the top as
                // decisions arrive (as `tail -f` does); further down it stays on its
                // decision.
                let keep = self
                    .selected_decision()
                    .filter(|_| self.selected(View::Decisions) > 0)
                    .map(|d| d.id);
                let verify = result.is_ok();
                self.decisions = loaded(result);
                if let Some(id) = keep
                    && let Some(i) = self.visible_decisions().iter().position(|d| d.id == id)
                {
                    self.state_mut(View::Decisions).selected = i;
                }
                let mut effects = self.after_load();
                if verify {
                    effects.extend(self.chain_due());
                }
                effects
            }
            Action::ChainChecked(result) => {
                self.chain = loaded(result);
                Vec::new()
            }
            Action::DraftLoaded { id, result } => {
                match result {
                    Ok(full) => {
                        self.all_revisions
                            .insert(id, (full.version, full.revisions.clone()));
                        if let Loaded::Ready(drafts) = &mut self.approvals
                            && let Some(draft) = drafts
                                .iter_mut()
                                .find(|d| d.id == id && d.version == full.version)
                        {
                            draft.revisions = full.revisions;
                        }
                        if self.selected_draft().is_some_and(|d| d.id == id) {
                            return self.move_diff_base(true);
                        }
                    }
                    Err(e) => self.say(
                        &format!("Could not load draft {id}'s revisions: {e}"),
                        false,
                    ),
                }
                Vec::new()
            }
            Action::HistoryLoaded { subject, result } => {
                // A verify someone asked that found this unknown send: the row shows it
                // before anyone here presses f (S5).
                if let Ok(decisions) = &result {
                    self.learn_from_history(&subject, decisions);
                }
                if let Some((wanted, history)) = &mut self.history
                    && *wanted == subject
                {
                    *history = loaded(result);
                }
                Vec::new()
            }
            Action::CountsLoaded(result) => {
                match result {
                    Ok(mut census) => {
                        if let Some(unreadable) = &self.unreadable_pending {
                            census.unreadable = unreadable.clone();
                        }
                        self.counts = Some(census);
                        self.counts_error = None;
                    }
                    Err(e) => self.counts_error = Some(e),
                }
                Vec::new()
            }
            Action::Verified { key, seen, answer } => self.verify_answered(key, seen, answer),
            Action::VerifyNotKept { key, why } => {
                self.verify_not_kept(&key, &why);
                Vec::new()
            }
            Action::EditorClosed {
                id,
                revision,
                version,
                result,
            } => self.editor_closed(id, revision, version, result),
            Action::Done(outcome) => {
                self.history_stale = true;
                // Settled here, as its answer said: no warning when it leaves the list.
                self.forget_settled(&outcome);
                self.after_edit(&outcome);
                let ok = outcome.ok();
                let mut text = self.word(&outcome);
                if let Outcome::Edited { id, .. }
                | Outcome::EditUnchanged { id, .. }
                | Outcome::EditNotSaved { id, .. } = &outcome
                {
                    text.push_str(self.dropped_note(*id));
                }
                match &outcome {
                    // It names the file the edit is kept in: it must not fade unread.
                    Outcome::EditNotSaved { kept: None, .. } => self.say_until_next(&text),
                    _ => self.say(&text, ok),
                }
                match outcome {
                    Outcome::Paged(_) | Outcome::Copied { .. } => Vec::new(),
                    _ => self.reload(),
                }
            }
        }
    }

    /// `e` on the selected draft: its payload as the screen shows it (see
    /// [`super::editor::editable`]), or the edit kept from a try that was not saved.
    /// `E` (`fresh`) drops that kept edit and starts from the payload again.
    fn open_editor(&mut self, fresh: bool) -> Vec<Effect> {
        if let Some(why) = &self.no_queue {
            let why = why.clone();
            self.say(&why, false);
            return Vec::new();
        }
        let Some(draft) = self.selected_draft() else {
            self.say("No draft selected.", false);
            return Vec::new();
        };
        let id = draft.id;
        if let Some(why) = &self.writes_refused {
            self.say(
                &format!(
                    "Not opening the editor: {why}, so an edit of draft {id} could not be saved. Nothing was changed."
                ),
                false,
            );
            return Vec::new();
        }
        let kept = self
            .kept_edits
            .get(&id)
            .filter(|kept| kept.key == draft.key)
            .cloned();
        if let Some(kept) = kept.as_ref().filter(|_| !fresh) {
            return vec![Effect::Edit {
                id,
                revision: kept.revision,
                version: kept.version,
                text: kept.text.clone(),
            }];
        }
        let Some(current) = draft.current() else {
            self.say(
                &format!("Draft {id}'s payload is not loaded yet; try again."),
                false,
            );
            return Vec::new();
        };
        let (revision, version) = (draft.revision, draft.version);
        let text = super::editor::editable(&current.payload);
        let edit = Effect::Edit {
            id,
            revision,
            version,
            text,
        };
        if kept.is_some() {
            // Said again with the edit's outcome: the editor covers this line.
            self.kept_edits.remove(&id);
            self.restarted = Some(id);
            self.say(
                &format!(
                    "Your kept edit of draft {id} was dropped; E opens revision {revision} as it is."
                ),
                true,
            );
        }
        vec![edit]
    }

    /// The editor exited: what it saved goes to the queue, judged against the draft as
    /// it was when the edit began. Nothing it saved is dropped: what cannot be sent
    /// now is kept for the next `e`.
    fn editor_closed(
        &mut self,
        id: i64,
        revision: i64,
        version: i64,
        result: Result<Vec<u8>, String>,
    ) -> Vec<Effect> {
        let bytes = match result {
            Ok(bytes) => bytes,
            Err(why) => {
                let again = if self.kept_edits.contains_key(&id) {
                    " Your earlier edit is still kept: e opens it again."
                } else {
                    ""
                };
                let dropped = self.dropped_note(id);
                self.say(
                    &format!("Editor: {why}. Nothing was changed.{again}{dropped}"),
                    false,
                );
                return Vec::new();
            }
        };
        // An emptied file is how many editors' users say "never mind" (git's commit
        // message, crontab -e): nothing is sent, and a kept edit is let go, so a text
        // that cannot be saved never traps the person.
        if bytes.iter().all(u8::is_ascii_whitespace) {
            let kept = self.kept_edits.remove(&id).is_some();
            let dropped = self.dropped_note(id);
            let now = self
                .approvals
                .ready()
                .and_then(|drafts| drafts.iter().find(|d| d.id == id))
                .map_or(revision, |d| d.revision);
            self.say(
                &if kept {
                    format!(
                        "The file was saved empty: your kept edit of draft {id} is dropped, and e opens revision {now} as it is. Nothing was changed."
                    )
                } else {
                    format!("The file was saved empty: nothing was changed.{dropped}")
                },
                true,
            );
            return Vec::new();
        }
        // The app's state is still the one `e` was pressed in: the UI waited for the
        // editor, so the draft is the one the edit began from.
        let Some(key) = self
            .approvals
            .ready()
            .and_then(|drafts| drafts.iter().find(|d| d.id == id))
            .map(|d| d.key.clone())
        else {
            self.say(
                &format!("Draft {id} is no longer listed; your edit was not saved."),
                false,
            );
            return Vec::new();
        };
        let (text, not_text) = match String::from_utf8(bytes) {
            Ok(text) => (text, None),
            Err(e) => (
                String::from_utf8_lossy(e.as_bytes()).into_owned(),
                Some(e.utf8_error().valid_up_to()),
            ),
        };
        let keep = |app: &mut App, text: String| {
            app.kept_edits.insert(
                id,
                KeptEdit {
                    key: key.clone(),
                    revision,
                    version,
                    text,
                },
            );
        };
        if let Some(offset) = not_text {
            keep(self, text);
            self.say(
                &format!(
                    "Not saved: what the editor saved is not UTF-8 text (invalid byte at offset {offset}). e opens your edit again.{START_AFRESH}"
                ),
                false,
            );
            return Vec::new();
        }
        if let Some(why) = self.decisions_off() {
            keep(self, text);
            self.say(
                &format!("{why} Your edit of draft {id} is kept: e opens it again.{START_AFRESH}"),
                false,
            );
            return Vec::new();
        }
        self.say(WORKING, true);
        vec![Effect::SaveEdit {
            id,
            key,
            revision,
            version,
            payload: text,
            by: self.by.clone(),
        }]
    }

    /// " Your earlier kept edit was dropped (E).", once, when `E` dropped draft
    /// `id`'s kept edit for the edit now ending.
    fn dropped_note(&mut self, id: i64) -> &'static str {
        if self.restarted == Some(id) {
            self.restarted = None;
            " Your earlier kept edit was dropped (E)."
        } else {
            ""
        }
    }

    /// The kept edits, those set aside included, each with its draft's id: what the
    /// runtime writes to files when the UI ends, so that nothing typed is lost.
    pub fn unsaved_edits(&self) -> Vec<(i64, &KeptEdit)> {
        let mut edits: Vec<(i64, &KeptEdit)> = self
            .kept_edits
            .iter()
            .map(|(id, kept)| (*id, kept))
            .collect();
        edits.sort_by_key(|(id, _)| *id);
        edits.extend(self.set_aside.iter().map(|(id, kept)| (*id, kept)));
        edits
    }

    /// What an edit's outcome changes here: the edit kept for another try, or
    /// dropped; after a new revision, its diff against the one it replaced.
    fn after_edit(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Edited { id, revision, .. } => {
                self.kept_edits.remove(id);
                if self.selected_draft().is_some_and(|d| d.id == *id) {
                    self.diff_base = Some(revision - 1);
                    self.detail_scroll = 0;
                }
            }
            Outcome::EditUnchanged { id, .. } => {
                self.kept_edits.remove(id);
            }
            Outcome::EditNotSaved {
                id,
                key,
                revision,
                version,
                kept,
                ..
            } => match kept {
                Some(text) => {
                    self.kept_edits.insert(
                        *id,
                        KeptEdit {
                            key: key.clone(),
                            revision: *revision,
                            version: *version,
                            text: text.clone(),
                        },
                    );
                }
                None => {
                    self.kept_edits.remove(id);
                }
            },
            _ => {}
        }
    }

    /// Drops the verify answers of the keys this screen just settled.
    fn forget_settled(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Resolved { key, .. } => {
                self.verifying.answers.remove(key);
            }
            Outcome::FoundElsewhere {
                key, seen, found, ..
            } => self.learn_found(key, seen, found),
            Outcome::Batch(items) => {
                for item in items {
                    self.forget_settled(item);
                }
            }
            _ => {}
        }
    }

    /// What came of a decision, as the status line says it.
    fn word(&self, outcome: &Outcome) -> String {
        // An approval sends nothing: say what does (N9).
        let send_with = |id: &i64| {
            format!(
                " Send it with: send-once dispatch {} {id} -- <send command>",
                crate::text::visible_inline(&shell_words::quote(&self.ledger_label))
            )
        };
        match outcome {
            Outcome::Approved {
                id,
                revision,
                expires_at,
                approvers: None,
            } => format!(
                "Approved draft {id} (revision {revision}) until {expires_at}.{}",
                send_with(id)
            ),
            Outcome::Approved {
                id,
                revision,
                expires_at,
                approvers: Some((names, count)),
            } => format!(
                "Approved draft {id} (revision {revision}) {count} of {count}, by {}: the approval is made, until {expires_at}.{}",
                crate::text::visible_inline(names),
                send_with(id)
            ),
            Outcome::Voted {
                id,
                revision,
                so_far,
                missing,
            } => format!(
                "Your approval of draft {id} (revision {revision}) is recorded: {so_far}; {} before it can be sent.",
                if *missing == 1 {
                    "one more person must approve it".to_owned()
                } else {
                    format!("{missing} more people must approve it")
                }
            ),
            Outcome::Rejected { id } => format!("Rejected draft {id}."),
            Outcome::Rechecked { id, summary } => format!("Rechecked draft {id}: {summary}."),
            Outcome::Resolved { key, status } => format!(
                "Marked {} {}. {}",
                short_key(key),
                status.as_str(),
                if *status == Status::Sent {
                    "It will not be sent again."
                } else {
                    "The next attempt for this key will send it."
                }
            ),
            Outcome::Refused { why, .. } | Outcome::FoundElsewhere { why, .. } => why.clone(),
            Outcome::Edited {
                id,
                revision,
                by,
                was_approved,
                voided,
            } => format!(
                "Draft {id} edited; revision {revision} by {}: needs approval{}{}.",
                crate::text::visible_inline(by),
                if *was_approved {
                    " (the approval was for the revision before)"
                } else {
                    ""
                },
                if voided.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; voided {} approval{} ({}) of revision {}",
                        voided.len(),
                        if voided.len() == 1 { "" } else { "s" },
                        crate::text::visible_inline(&voided.join(", ")),
                        revision - 1
                    )
                }
            ),
            Outcome::EditUnchanged { id, revision } => format!(
                "No change: the payload is draft {id}'s revision {revision} as it was; nothing was written."
            ),
            Outcome::EditNotSaved { why, kept, .. } => match kept {
                Some(_) => format!("Not saved: {why}. e opens your edit again.{START_AFRESH}"),
                None => format!("Not saved: {why}."),
            },
            Outcome::Paged(Ok(())) => "Back from the pager.".into(),
            Outcome::Paged(Err(why)) => format!("Pager: {why}. The screen is back."),
            Outcome::Copied { what } => format!("Copied the {what} to the clipboard."),
            Outcome::Batch(items) => {
                let done = items.iter().filter(|o| o.ok()).count();
                let verb = match items.first() {
                    Some(Outcome::Rejected { .. }) => "Rejected".to_owned(),
                    Some(Outcome::Resolved { status, .. }) => format!("Marked {}", status.as_str()),
                    _ => match items.iter().find_map(|o| match o {
                        Outcome::Resolved { status, .. } => Some(*status),
                        _ => None,
                    }) {
                        Some(status) => format!("Marked {}", status.as_str()),
                        None if items.iter().any(|o| matches!(o, Outcome::Rejected { .. })) => {
                            "Rejected".to_owned()
                        }
                        None => "Done".to_owned(),
                    },
                };
                let mut text = format!("{verb}: {done} of {}.", items.len());
                // The same reason for several (a full disk, a replaced ledger) is said
                // once, with how many it stopped; each other reason names its item.
                let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
                for item in items {
                    let (subject, why) = match item {
                        Outcome::Refused { subject, why } => (subject, why),
                        Outcome::FoundElsewhere { key, why, .. } => (key, why),
                        _ => continue,
                    };
                    {
                        let why = why.trim_end_matches('.').to_owned();
                        match reasons.iter_mut().find(|(w, _)| *w == why) {
                            Some((_, subjects)) => subjects.push(short_key(subject)),
                            None => reasons.push((why, vec![short_key(subject)])),
                        }
                    }
                }
                let refused: usize = reasons.iter().map(|(_, s)| s.len()).sum();
                let refused_total = refused;
                if refused > 0 {
                    let parts: Vec<String> = reasons
                        .into_iter()
                        .map(|(why, subjects)| {
                            if subjects.len() > 1 && subjects.len() == refused_total {
                                format!("all for one reason: {why}")
                            } else if subjects.len() > 1 {
                                format!("{} of them: {why}", subjects.len())
                            } else if why.contains(subjects[0].as_str()) {
                                why
                            } else {
                                format!("{}: {why}", subjects[0])
                            }
                        })
                        .collect();
                    // The status line holds a few lines: past a few reasons, the
                    // Decisions view (4) has each refusal, with who decided first.
                    let shown = parts.len().min(BATCH_REASONS_SHOWN);
                    let rest = parts.len() - shown;
                    let more = if rest > 0 {
                        format!("; and {rest} more reasons, each in view 4 (Decisions)")
                    } else {
                        String::new()
                    };
                    text.push_str(&format!(
                        " Refused {refused}: {}{more}.",
                        parts[..shown].join("; ")
                    ));
                }
                text
            }
        }
    }

    /// After a list arrived: keep every selection in range, and apply where the UI
    /// was asked to open, once what it needs has arrived.
    /// Whether the log just loaded needs its chain checked now: the first load, a new
    /// newest decision, or the last check long enough ago. Otherwise the check is owed,
    /// and made at the first tick past [`CHAIN_RECHECK_MS`], so an edit deep in the log
    /// shows within seconds without every change (every send) hashing the whole log.
    fn chain_due(&mut self) -> Option<Effect> {
        let newest = self
            .decisions
            .ready()
            .and_then(|log| log.first())
            .map(|d| (d.id, d.hash().map(str::to_owned)));
        let due = self
            .chain_checked
            .as_ref()
            .is_none_or(|(at, seen)| *seen != newest || self.now - at >= CHAIN_RECHECK_MS);
        if due {
            self.chain_checked = Some((self.now, newest));
            self.chain_owed = false;
            Some(Effect::CheckChain)
        } else {
            self.chain_owed = true;
            None
        }
    }

    fn after_load(&mut self) -> Vec<Effect> {
        self.clamp();
        self.apply_start()
    }

    fn apply_start(&mut self) -> Vec<Effect> {
        let queue_ready = self.no_queue.is_some() || self.approvals.ready().is_some();
        if !queue_ready || self.unknown.ready().is_none() {
            return Vec::new();
        }
        let start = std::mem::take(&mut self.start);
        if let Some(focus) = start.focus {
            // A key as `show` and `resolve` take it: whole, or a prefix of one key only.
            let drafts = self.visible_drafts();
            let draft_at = drafts
                .iter()
                .position(|d| d.key == focus || d.id.to_string() == focus)
                .or_else(|| only_one(drafts.iter().map(|d| d.key.starts_with(&focus))));
            let unknown = self.visible_unknown();
            let unknown_at = unknown
                .iter()
                .position(|e| e.key() == focus)
                .or_else(|| only_one(unknown.iter().map(|e| e.key().starts_with(&focus))));
            match (draft_at, unknown_at) {
                (Some(i), _) if start.view.is_none_or(|v| v == View::Approvals) => {
                    self.view = View::Approvals;
                    self.state_mut(View::Approvals).selected = i;
                }
                (_, Some(i)) if start.view.is_none_or(|v| v == View::Unknown) => {
                    self.view = View::Unknown;
                    self.state_mut(View::Unknown).selected = i;
                }
                _ => {
                    // Anything else is looked up in the ledger: a search for it.
                    self.say(
                        &format!(
                            "{} is not in the queue or the unknown sends: the ledger is searched for it.",
                            crate::text::visible_inline(&focus)
                        ),
                        true,
                    );
                    self.view = View::Ledger;
                    self.state_mut(View::Ledger).filter = focus;
                    self.state_mut(View::Ledger).selected = 0;
                    self.ledger_offset = 0;
                    self.ledger = Loaded::Loading;
                    return vec![Effect::LoadLedger(self.ledger_query())];
                }
            }
        } else if start.view.is_none() {
            // Nothing to review but sends to reconcile: open where the work is.
            let no_drafts =
                self.no_queue.is_some() || self.approvals.ready().is_some_and(|d| d.is_empty());
            let unknown = self.unknown.ready().is_some_and(|u| !u.is_empty());
            if self.view == View::Approvals && no_drafts && unknown {
                self.view = View::Unknown;
            }
        }
        Vec::new()
    }

    /// Marks of what no longer is listed (settled, decided, gone) are dropped.
    fn prune_marks(&mut self) {
        // Nothing marked, nothing to drop: the sets below are not made on every load.
        if let Some(drafts) = self.approvals.ready()
            && !self.views[View::Approvals.index()].marked.is_empty()
        {
            let ids: std::collections::HashSet<String> =
                drafts.iter().map(|d| d.id.to_string()).collect();
            self.views[View::Approvals.index()]
                .marked
                .retain(|id| ids.contains(id));
        }
        if let Some(entries) = self.unknown.ready()
            && !self.views[View::Unknown.index()].marked.is_empty()
        {
            let keys: std::collections::HashSet<&str> = entries.iter().map(|e| e.key()).collect();
            self.views[View::Unknown.index()]
                .marked
                .retain(|k| keys.contains(k.as_str()));
        }
    }

    fn clamp(&mut self) {
        for view in View::ALL {
            let count = self.row_count(view);
            let s = &mut self.state_mut(view).selected;
            *s = (*s).min(count.saturating_sub(1));
        }
    }

    fn mouse(&mut self, kind: MouseEventKind, column: u16, row: u16) -> Vec<Effect> {
        let hit = view::hit(self, column, row);
        match (kind, hit) {
            (MouseEventKind::Down(MouseButton::Left), Hit::Row(i)) => {
                if i < self.row_count(self.view) {
                    self.state_mut(self.view).selected = i;
                    self.detail_scroll = 0;
                    self.diff_base = None;
                }
                Vec::new()
            }
            (MouseEventKind::ScrollDown, Hit::Detail) => self.command(Command::ScrollDetailDown),
            (MouseEventKind::ScrollUp, Hit::Detail) => self.command(Command::ScrollDetailUp),
            (MouseEventKind::ScrollDown, _) => self.command(Command::Down),
            (MouseEventKind::ScrollUp, _) => self.command(Command::Up),
            _ => Vec::new(),
        }
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return vec![Effect::Quit];
        }
        if self.too_small() {
            if command_for(self.view, &key) == Some(Command::Quit) {
                self.quit = true;
                return vec![Effect::Quit];
            }
            self.say(
                "A key was ignored while the terminal was too small; nothing was decided.",
                false,
            );
            return Vec::new();
        }
        // A key after the UI opened is the person choosing: it no longer moves itself.
        self.start.view = self.start.view.or(Some(self.view));
        // What the status said has been read: the next key clears it (a decision
        // still being written keeps saying so).
        if !self.working() {
            self.status = None;
        }
        if self.overlay.is_none() {
            self.overlay_stale = false;
        }
        if let Some(overlay) = self.overlay.take() {
            return self.overlay_key(overlay, key);
        }
        if let Some(input) = self.filter_input.take() {
            return self.filter_key(input, key);
        }
        match command_for(self.view, &key) {
            Some(command) => self.command(command),
            None => Vec::new(),
        }
    }

    fn filter_key(&mut self, mut input: Input, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.ledger_search_due = false;
                self.set_filter(String::new())
            }
            KeyCode::Enter => {
                let text = input.value().trim().to_owned();
                let due = std::mem::take(&mut self.ledger_search_due);
                if text == self.filter(self.view) && !due {
                    return Vec::new();
                }
                self.set_filter(text)
            }
            _ => {
                input.handle_event(&Event::Key(key));
                let text = input.value().trim().to_owned();
                self.filter_input = Some(input);
                if text == self.filter(self.view) {
                    return Vec::new();
                }
                if self.view == View::Ledger {
                    // The store searches every entry: typing asks it at most once a
                    // tick (Enter asks at once), not once a letter.
                    let state = self.state_mut(View::Ledger);
                    state.filter = text;
                    state.selected = 0;
                    self.ledger_search_due = true;
                    return Vec::new();
                }
                self.set_filter(text)
            }
        }
    }

    fn set_filter(&mut self, text: String) -> Vec<Effect> {
        let view = self.view;
        let state = self.state_mut(view);
        state.filter = text;
        state.selected = 0;
        self.detail_scroll = 0;
        self.diff_base = None;
        if view == View::Ledger {
            self.ledger_offset = 0;
            self.ledger = Loaded::Loading;
            return vec![Effect::LoadLedger(self.ledger_query())];
        }
        Vec::new()
    }

    /// The commands that write a decision.
    fn decides(command: Command) -> bool {
        matches!(
            command,
            Command::Approve
                | Command::Reject
                | Command::Recheck
                | Command::Edit
                | Command::EditFresh
                | Command::MarkSent
                | Command::MarkFailed
                | Command::SettleVerified
        )
    }

    fn command(&mut self, command: Command) -> Vec<Effect> {
        if Self::decides(command)
            && let Some(why) = self.decisions_off()
        {
            self.say(&why, false);
            return Vec::new();
        }
        let view = self.view;
        let rows = self.row_count(view);
        if matches!(
            command,
            Command::Up
                | Command::Down
                | Command::PageUp
                | Command::PageDown
                | Command::Top
                | Command::Bottom
                | Command::NextView
                | Command::PreviousView
                | Command::Show(_)
        ) {
            self.detail_scroll = 0;
            self.diff_base = None;
        }
        match command {
            Command::ScrollDetailDown => self.detail_scroll = self.detail_scroll.saturating_add(3),
            Command::ScrollDetailUp => self.detail_scroll = self.detail_scroll.saturating_sub(3),
            Command::Quit => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            Command::NextView => self.view = view.next(),
            Command::PreviousView => self.view = view.previous(),
            Command::Show(to) => self.view = to,
            Command::Up => {
                let s = &mut self.state_mut(view).selected;
                *s = s.saturating_sub(1);
            }
            Command::Down => return self.move_down(1, rows),
            Command::PageUp => {
                let by = self.page_rows();
                let s = &mut self.state_mut(view).selected;
                *s = s.saturating_sub(by);
                let at_top = *s == 0;
                if view == View::Ledger && at_top && self.ledger_offset > 0 {
                    return self.turn_ledger_page(false);
                }
            }
            Command::PageDown => return self.move_down(self.page_rows(), rows),
            Command::Top => self.state_mut(view).selected = 0,
            Command::Bottom => self.state_mut(view).selected = rows.saturating_sub(1),
            Command::Help => self.overlay = Some(Overlay::Help),
            Command::CommandLine => self.overlay = Some(Overlay::Command(Input::default())),
            Command::Filter => {
                self.filter_input = Some(Input::new(self.filter(view).to_owned()));
            }
            Command::Back => {
                let state = self.state_mut(view);
                if !state.marked.is_empty() {
                    let n = state.marked.len();
                    state.marked.clear();
                    self.say(&format!("Cleared {n} mark(s)."), true);
                } else if !state.filter.is_empty() {
                    return self.set_filter(String::new());
                }
            }
            Command::ToggleMark => self.toggle_mark(),
            Command::MarkAll => self.mark_all(),
            Command::Sort => {
                let state = self.state_mut(view);
                state.sort = state.sort.next();
                state.selected = 0;
                let label = state.sort.label_for(view);
                self.say(&format!("Sorted {label}."), true);
            }
            Command::CycleStatus => {
                self.ledger_status = match self.ledger_status {
                    None => Some(Status::Pending),
                    Some(Status::Pending) => Some(Status::Sent),
                    Some(Status::Sent) => Some(Status::Failed),
                    Some(Status::Failed) => None,
                };
                self.ledger_offset = 0;
                self.state_mut(view).selected = 0;
                self.ledger = Loaded::Loading;
                return vec![Effect::LoadLedger(self.ledger_query())];
            }
            Command::Approve if self.no_queue.is_some() => {
                self.say(
                    "This ledger has no review queue (it is a JSON Lines file).",
                    false,
                );
            }
            Command::Approve => self.open_approve(),
            Command::Reject => self.open_reject(),
            Command::Recheck => match self.selected_draft() {
                Some(draft) if draft.recheck.is_some() => {
                    let id = draft.id;
                    self.say(&format!("Rechecking the facts of draft {id}…"), true);
                    return vec![Effect::Recheck { id }];
                }
                Some(draft) => {
                    let id = draft.id;
                    self.say(
                        &format!(
                            "Draft {id} has no recheck command; its facts can be pushed with send-once draft facts."
                        ),
                        false,
                    );
                }
                None => self.say("No draft selected.", false),
            },
            Command::MarkSent if self.view == View::Ledger => self.open_sent_from_ledger(),
            Command::MarkSent | Command::MarkFailed => {
                let status = if command == Command::MarkSent {
                    Status::Sent
                } else {
                    Status::Failed
                };
                self.open_settle(status);
            }
            Command::Edit => return self.open_editor(false),
            Command::EditFresh => return self.open_editor(true),
            Command::Verify => return self.verify_selected(),
            Command::SettleVerified => self.settle_verified(),
            Command::Copy => return self.copy(),
            Command::Page => return self.page(),
            Command::OlderDiffBase => return self.move_diff_base(true),
            Command::NewerDiffBase => return self.move_diff_base(false),
        }
        Vec::new()
    }

    fn move_down(&mut self, by: usize, rows: usize) -> Vec<Effect> {
        let view = self.view;
        let wanted = self.selected(view) + by;
        if view == View::Ledger && wanted >= rows && rows == LEDGER_PAGE {
            return self.turn_ledger_page(true);
        }
        self.state_mut(view).selected = wanted.min(rows.saturating_sub(1));
        Vec::new()
    }

    /// Loads the next (or previous) page of the ledger view from the store.
    fn turn_ledger_page(&mut self, forward: bool) -> Vec<Effect> {
        if forward {
            self.ledger_offset += LEDGER_PAGE;
            self.state_mut(View::Ledger).selected = 0;
        } else {
            self.ledger_offset = self.ledger_offset.saturating_sub(LEDGER_PAGE);
            self.state_mut(View::Ledger).selected = LEDGER_PAGE - 1;
        }
        self.ledger = Loaded::Loading;
        vec![Effect::LoadLedger(self.ledger_query())]
    }

    /// The id (a draft's) or key (an entry's) of the selected row, for marks.
    fn selected_mark_id(&self) -> Option<String> {
        match self.view {
            View::Approvals => self.selected_draft().map(|d| d.id.to_string()),
            View::Unknown => self.selected_unknown().map(|e| e.key().to_owned()),
            _ => None,
        }
    }

    fn toggle_mark(&mut self) {
        let Some(id) = self.selected_mark_id() else {
            self.say("Nothing selected to mark.", false);
            return;
        };
        let view = self.view;
        let marked = &mut self.state_mut(view).marked;
        if !marked.remove(&id) {
            marked.insert(id);
        }
        let rows = self.row_count(view);
        self.move_down(1, rows);
    }

    fn mark_all(&mut self) {
        let view = self.view;
        let ids: Vec<String> = match view {
            View::Approvals => self
                .visible_drafts()
                .iter()
                .map(|d| d.id.to_string())
                .collect(),
            View::Unknown => self
                .visible_unknown()
                .iter()
                .map(|e| e.key().to_owned())
                .collect(),
            _ => Vec::new(),
        };
        let marked = &mut self.state_mut(view).marked;
        // Pressed again when everything shown is marked, it unmarks them (as k9s does).
        if !ids.is_empty() && ids.iter().all(|id| marked.contains(id)) {
            for id in &ids {
                marked.remove(id);
            }
            self.say(&format!("Unmarked {} row(s).", ids.len()), true);
        } else {
            let n = ids.len();
            marked.extend(ids);
            self.say(
                &format!("Marked {n} row(s) the filter shows; Esc clears the marks."),
                true,
            );
        }
    }

    fn open_approve(&mut self) {
        if !self.state(View::Approvals).marked.is_empty() {
            self.say(
                "Approving is one draft at a time: a person approves a payload they read. Esc clears the marks.",
                false,
            );
            return;
        }
        let Some(draft) = self.selected_draft() else {
            self.say("No draft selected.", false);
            return;
        };
        // What the store would refuse, said before the form opens: the form's name is
        // the screen's, so the store still judges whatever name is typed.
        let tally = draft.tally(self.now);
        let same = |name: &str| crate::review::quorum::same_person(name, &self.by);
        let wrote = draft
            .revisions
            .iter()
            .rev()
            .filter_map(|r| Some((r.revision, r.submitted_by.as_deref()?)))
            .chain(draft.submitted_by.as_deref().map(|author| (1, author)))
            .find(|(_, author)| same(author));
        if !draft.quorum.self_approval
            && let Some((revision, author)) = wrote
        {
            // As the command line says it: a respelled name is named as whose it is.
            let who = if author == self.by {
                crate::text::visible_inline(&self.by).into_owned()
            } else {
                format!(
                    "{} (the same name as {})",
                    crate::text::visible_inline(&self.by),
                    crate::text::visible_inline(author)
                )
            };
            self.say(
                &format!(
                    "{who} wrote revision {revision} of draft {}; {}.",
                    draft.id,
                    others_must_approve(tally.missing())
                ),
                false,
            );
            return;
        }
        if draft.needs_quorum() {
            if tally.complete {
                self.say(
                    &format!(
                        "Draft {} is already approved {} of {} (by {}).",
                        draft.id,
                        tally.required,
                        tally.required,
                        crate::text::visible_inline(&tally.names().join(", "))
                    ),
                    false,
                );
                return;
            }
            if tally.votes.iter().any(|v| same(&v.by)) {
                self.say(
                    &format!(
                        "You ({}) already approved revision {} ({}); {}.",
                        crate::text::visible_inline(&self.by),
                        draft.revision,
                        tally.label(),
                        others_must_approve(tally.missing())
                    ),
                    false,
                );
                return;
            }
        }
        let quorum = draft.needs_quorum().then(|| crate::ui::forms::QuorumShown {
            approved: tally.votes.len() as i64,
            required: tally.required,
            approvers: tally.names().join(", "),
            earliest: tally
                .votes
                .iter()
                .filter_map(|v| {
                    let at = v.expires_at.as_deref()?;
                    Some((v.by.clone(), at.to_owned(), time::parse_date(at)?))
                })
                .min_by_key(|(_, _, ms)| *ms),
            shown_at: self.now,
        });
        let drift = draft.drift();
        let expired = draft.approval_expired(self.now).then(|| {
            format!(
                "Its approval by {} expired at {}; this approves it again.",
                draft.approved_by().map_or("?", |(by, _)| by),
                draft.expires_at().unwrap_or("?")
            )
        });
        let edit = self.written_by_edit(draft);
        let kind = FormKind::Approve {
            quorum,
            edit,
            expired,
            id: draft.id,
            revision: draft.revision,
            version: draft.version,
            suspicious: draft.suspicious(),
            drifted: drift.changed > 0,
            unchecked: matches!(drift.status, DriftStatus::NotChecked) && !drift.rows.is_empty(),
        };
        let title = format!("Approve draft {} (revision {})", draft.id, draft.revision);
        let fields = vec![
            field("TTL", "12h", true),
            field("Name", &self.by, true),
            field("Note", "", false),
        ];
        self.overlay = Some(Overlay::Form(Form::new(kind, title, fields)));
    }

    /// "erin's edit of revision 2 by agent", when the draft's current revision was
    /// written by an edit, as the decision log has it (what is loaded of it).
    fn written_by_edit(&self, draft: &Draft) -> Option<String> {
        let number = |d: &Decision, field: &str| d.detail.get(field).and_then(|v| v.as_i64());
        let author = draft.current()?.submitted_by.as_deref();
        let decisions = self.history_of(&format!("draft:{}", draft.id));
        let edit = decisions.iter().rev().find(|d| {
            d.action.as_str() == "edit"
                && d.outcome == crate::ledger::DecisionOutcome::Changed
                && number(d, "toRevision") == Some(draft.revision)
                && d.by.as_deref() == author
        })?;
        let from = number(edit, "fromRevision").or_else(|| number(edit, "revision"))?;
        let from_author = draft
            .revision_of(from)
            .and_then(|r| r.submitted_by.as_deref())
            .map(|by| format!(" by {}", crate::text::visible_inline(by)))
            .unwrap_or_default();
        Some(format!(
            "{}'s edit of revision {from}{from_author}",
            crate::text::visible_inline(author.unwrap_or("someone"))
        ))
    }

    fn open_reject(&mut self) {
        let marked = &self.state(View::Approvals).marked;
        if !marked.is_empty() {
            // Only the marked drafts the filter shows: a decision applies to what the
            // person sees, and rows marked before the filter changed are not on screen.
            let drafts: Vec<(i64, i64)> = self
                .visible_drafts()
                .iter()
                .filter(|d| marked.contains(&d.id.to_string()))
                .map(|d| (d.id, d.version))
                .collect();
            let hidden = self.approvals.ready().map_or(0, |all| {
                all.iter()
                    .filter(|d| marked.contains(&d.id.to_string()))
                    .count()
            }) - drafts.len();
            if drafts.is_empty() {
                self.say(&hidden_marks(hidden), false);
                return;
            }
            let n = drafts.len();
            self.overlay = Some(Overlay::Form(Form::new(
                FormKind::RejectMany { drafts },
                format!("Reject {n} marked drafts{}", left_hidden(hidden)),
                vec![field("Reason", "", true), field("Name", &self.by, true)],
            )));
            return;
        }
        if let Some(draft) = self.selected_draft() {
            let (id, revision, version) = (draft.id, draft.revision, draft.version);
            self.overlay = Some(Overlay::Form(Form::new(
                FormKind::Reject { id, version },
                format!("Reject draft {id} (revision {revision})"),
                vec![field("Reason", "", true), field("Name", &self.by, true)],
            )));
        } else {
            self.say("No draft selected.", false);
        }
    }

    pub(super) fn open_settle(&mut self, status: Status) {
        let marked = &self.state(View::Unknown).marked;
        if !marked.is_empty() {
            // Only the marked sends the filter shows (see `open_reject`): settled
            // failed, a hidden one would be sent again on its next run.
            // Settled failed, a send verify found would go out again: each such row is
            // settled on its own, against the evidence, or not at all.
            let found: Vec<String> = if status == Status::Failed {
                self.visible_unknown()
                    .iter()
                    .filter(|e| marked.contains(e.key()))
                    .filter(|e| self.verified_happened(e.key()).is_some())
                    .map(|e| e.key().to_owned())
                    .collect()
            } else {
                Vec::new()
            };
            let sends: Vec<Settle> = self
                .visible_unknown()
                .iter()
                .filter(|e| marked.contains(e.key()) && !found.iter().any(|k| k == e.key()))
                .map(|e| Settle {
                    key: e.key().to_owned(),
                    who: crate::text::visible_inline(&entry_who(e)).into_owned(),
                    in_flight: self.maybe_in_flight(e),
                    seen: Seen::entry(e),
                })
                .collect();
            let hidden = self.unknown.ready().map_or(0, |all| {
                all.iter().filter(|e| marked.contains(e.key())).count()
            }) - sends.len()
                - found.len();
            let left_out = match found.len() {
                0 => String::new(),
                n => format!(" ({n} that verify found left out)"),
            };
            if sends.is_empty() {
                if found.is_empty() {
                    self.say(&hidden_marks(hidden), false);
                } else {
                    self.say(
                        &format!(
                            "Nothing to mark failed: verify found every marked send at the provider{left_out}."
                        ),
                        true,
                    );
                }
                return;
            }
            let n = sends.len();
            if !found.is_empty() {
                self.say(
                    &format!(
                        "{} marked that verify found at the provider are left out: marked failed, each would be sent again; f on one asks for its evidence.",
                        found.len()
                    ),
                    true,
                );
            }
            self.overlay = Some(Overlay::Form(Form::new(
                FormKind::SettleMany { status, sends },
                format!(
                    "Settle {n} marked sends as {}{}{left_out}",
                    status.as_str(),
                    left_hidden(hidden)
                ),
                vec![field("Note", "", false), field("Name", &self.by, true)],
            )));
            return;
        }
        self.open_settle_one(status);
    }

    /// `s` in the Ledger view: the sent form for the selected entry, pending or failed.
    /// A failed one is where a send someone marked failed, that the provider has, is
    /// recorded sent, so the next run does not send it a second time.
    fn open_sent_from_ledger(&mut self) {
        let Some(entry) = self.selected_entry().cloned() else {
            self.say("No entry selected.", false);
            return;
        };
        if entry.status() == Status::Sent {
            let short = crate::text::visible_inline(&short_key(entry.key())).into_owned();
            self.say(&format!("{short} is already recorded as sent."), false);
            return;
        }
        self.open_settle_on(&entry, Status::Sent);
        // A found send someone marked failed: filled in with verify's answer (K2).
        if let Some(fix) = self
            .verifying
            .sent_fix
            .as_ref()
            .filter(|f| f.key == entry.key())
            .cloned()
            && let Some(Overlay::Form(form)) = &mut self.overlay
        {
            for field in &mut form.fields {
                match field.label {
                    "Note" => field.input = tui_input::Input::new(fix.note.clone()),
                    "Provider id" => {
                        field.input =
                            tui_input::Input::new(fix.provider_id.clone().unwrap_or_default())
                    }
                    _ => {}
                }
            }
        }
    }

    /// The settle form for the selected unknown send alone, whatever is marked.
    pub(super) fn open_settle_one(&mut self, status: Status) {
        let Some(entry) = self.selected_unknown().cloned() else {
            self.say("No unknown send selected.", false);
            return;
        };
        self.open_settle_on(&entry, status);
    }

    /// The settle form for `entry`, as it is shown.
    fn open_settle_on(&mut self, entry: &Entry, status: Status) {
        let sent = status == Status::Sent;
        let key = entry.key().to_owned();
        let who = crate::text::who_and_what(entry.meta())
            .map(|w| crate::text::visible_inline(&w).into_owned())
            .unwrap_or_default();
        let in_flight = self.maybe_in_flight(entry);
        // A verify answer for this status starts the form; the settlement applies to
        // the attempt it was about (a failed entry's answers went with its row).
        let prefill = self
            .verify_prefill(&key, status)
            .filter(|_| entry.status() == Status::Pending);
        let seen = prefill
            .as_ref()
            .map_or_else(|| Seen::entry(entry), |p| p.seen.clone());
        // The form's title names who the send was for, as the row does; the key
        // only when the entry says nothing of it (N10).
        let short = if who.is_empty() {
            crate::text::visible_inline(&short_key(&key)).into_owned()
        } else {
            who.clone()
        };
        let note = prefill.as_ref().map_or("", |p| p.note.as_str());
        let mut fields = vec![field("Note", note, false), field("Name", &self.by, true)];
        let (kind, title) = if sent {
            let id = prefill.as_ref().and_then(|p| p.provider_id.as_deref());
            fields.push(field("Provider id", id.unwrap_or(""), false));
            (
                FormKind::MarkSent {
                    key,
                    who,
                    in_flight,
                    seen,
                },
                if entry.status() == Status::Failed {
                    format!("Mark {short} sent (it is failed now)")
                } else {
                    format!("Mark {short} sent")
                },
            )
        } else {
            let against = self.verified_happened(&key);
            let title = match &against {
                Some(against) => {
                    fields.push(field("Evidence", "", true));
                    format!(
                        "Mark {short} failed? Verify found it: type {} in Evidence",
                        against.typed
                    )
                }
                None => format!("Mark {short} failed"),
            };
            (
                FormKind::MarkFailed {
                    key,
                    who,
                    in_flight,
                    seen,
                    against,
                },
                title,
            )
        };
        self.overlay = Some(Overlay::Form(Form::new(kind, title, fields)));
    }

    /// What `y` can copy from the selected row.
    pub fn copy_choices(&self) -> Vec<CopyChoice> {
        let mut choices = Vec::new();
        let mut entry_choices = |entry: &Entry| {
            choices.push(CopyChoice {
                key: 'k',
                what: "key",
                text: entry.key().to_owned(),
            });
            if let Some(id) = entry.provider_id() {
                choices.push(CopyChoice {
                    key: 'p',
                    what: "provider id",
                    text: id.to_owned(),
                });
            }
        };
        match self.view {
            View::Approvals => {
                if let Some(draft) = self.selected_draft() {
                    choices.push(CopyChoice {
                        key: 'i',
                        what: "draft id",
                        text: draft.id.to_string(),
                    });
                    choices.push(CopyChoice {
                        key: 'k',
                        what: "key",
                        text: draft.key.clone(),
                    });
                }
            }
            View::Unknown => {
                if let Some(entry) = self.selected_unknown() {
                    entry_choices(entry);
                }
            }
            View::Ledger => {
                if let Some(entry) = self.selected_entry() {
                    entry_choices(entry);
                }
            }
            View::Decisions => {
                if let Some(decision) = self.selected_decision() {
                    choices.push(CopyChoice {
                        key: 's',
                        what: "subject",
                        text: decision.subject.to_string(),
                    });
                }
            }
        }
        choices
    }

    /// The effect that copies `choice`, or, when its text holds characters that would
    /// act on a terminal or hide text when pasted, a refusal that says so: what is
    /// copied must be exactly what was shown.
    fn copy_effect(&mut self, choice: &CopyChoice) -> Vec<Effect> {
        if choice.text.chars().any(crate::text::is_suspicious) {
            self.say(
                &format!(
                    "Not copied: the {} holds control, bidi or invisible characters (shown as marks). send-once show --json writes them as \\u escapes.",
                    choice.what
                ),
                false,
            );
            return Vec::new();
        }
        vec![Effect::Copy {
            what: choice.what.to_owned(),
            text: choice.text.clone(),
        }]
    }

    fn copy(&mut self) -> Vec<Effect> {
        let mut choices = self.copy_choices();
        match choices.len() {
            0 => {
                self.say("Nothing selected to copy.", false);
                Vec::new()
            }
            1 => {
                let choice = choices.remove(0);
                self.copy_effect(&choice)
            }
            _ => {
                self.overlay = Some(Overlay::Copy(choices));
                Vec::new()
            }
        }
    }

    /// The revisions the selected draft's payload can be compared with, newest first.
    pub fn diff_bases(&self) -> Vec<i64> {
        let Some(draft) = self.selected_draft() else {
            return Vec::new();
        };
        let mut bases: Vec<i64> = draft
            .revisions
            .iter()
            .map(|r| r.revision)
            .filter(|r| *r < draft.revision)
            .collect();
        bases.sort_unstable_by(|a, b| b.cmp(a));
        bases
    }

    /// The revision the payload is compared with now, if any.
    pub fn diff_base_of(&self, draft: &Draft) -> Option<i64> {
        self.diff_base
            .filter(|b| draft.revision_of(*b).is_some() && *b < draft.revision)
            .or_else(|| {
                if draft.edited_after_approval() {
                    draft.approved_revision
                } else {
                    draft.revision_of(draft.revision - 1).map(|r| r.revision)
                }
            })
    }

    /// Drafts from the queue, with every revision put back where they were loaded
    /// and the draft has not changed since.
    fn with_all_revisions(&mut self, mut drafts: Vec<Draft>) -> Vec<Draft> {
        let open: std::collections::HashSet<i64> = drafts.iter().map(|d| d.id).collect();
        self.all_revisions.retain(|id, _| open.contains(id));
        for draft in &mut drafts {
            if let Some((version, revisions)) = self.all_revisions.get(&draft.id)
                && *version == draft.version
            {
                draft.revisions = revisions.clone();
            }
        }
        drafts
    }

    fn move_diff_base(&mut self, older: bool) -> Vec<Effect> {
        let Some(draft) = self.selected_draft() else {
            self.say("No draft selected.", false);
            return Vec::new();
        };
        // The queue holds the current, previous and approved revisions; going further
        // back loads the rest first.
        let holds_all = draft.revisions.len() as i64 >= draft.revision;
        let (id, version) = (draft.id, draft.version);
        let bases = self.diff_bases();
        let Some(current) = self.diff_base_of(draft) else {
            self.say(
                "This draft has one revision: there is nothing to compare.",
                false,
            );
            return Vec::new();
        };
        let approved = draft.approved_revision;
        let at = bases.iter().position(|b| *b == current).unwrap_or(0);
        let next = if older {
            bases.get(at + 1)
        } else {
            at.checked_sub(1).and_then(|i| bases.get(i))
        };
        if next.is_none()
            && older
            && !holds_all
            && self
                .all_revisions
                .get(&id)
                .is_none_or(|(v, _)| *v != version)
        {
            self.say(&format!("Loading every revision of draft {id}…"), true);
            return vec![Effect::LoadDraft(id)];
        }
        match next {
            Some(base) => {
                let base = *base;
                self.diff_base = Some(base);
                self.detail_scroll = 0;
                let approved = if approved == Some(base) {
                    " (the approved one)"
                } else {
                    ""
                };
                self.say(&format!("Comparing with revision {base}{approved}."), true);
            }
            None => self.say(
                &format!(
                    "Already comparing with the {} revision before this one ({current}).",
                    if older { "oldest" } else { "newest" }
                ),
                false,
            ),
        }
        Vec::new()
    }

    fn page(&mut self) -> Vec<Effect> {
        let page = match self.view {
            View::Approvals => self.selected_draft().map(|draft| {
                (
                    format!("draft {}", draft.id),
                    view::draft_text(draft, self.diff_base_of(draft)),
                )
            }),
            View::Unknown => self
                .selected_unknown()
                .map(|e| (format!("entry {}", short_key(e.key())), view::entry_text(e))),
            View::Ledger => self
                .selected_entry()
                .map(|e| (format!("entry {}", short_key(e.key())), view::entry_text(e))),
            View::Decisions => None,
        };
        match page {
            Some((title, text)) => vec![Effect::Page { title, text }],
            None => {
                self.say("Nothing selected to open.", false);
                Vec::new()
            }
        }
    }

    fn overlay_key(&mut self, overlay: Overlay, key: KeyEvent) -> Vec<Effect> {
        match overlay {
            Overlay::Help => {
                if !matches!(
                    key.code,
                    KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q')
                ) {
                    self.overlay = Some(Overlay::Help);
                }
                Vec::new()
            }
            Overlay::Confirm(confirm) => match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => self.confirmed(confirm),
                KeyCode::Enter if confirm.warning.is_none() => self.confirmed(confirm),
                KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('N') => {
                    self.say("Cancelled; nothing was written.", true);
                    Vec::new()
                }
                _ => {
                    self.overlay = Some(Overlay::Confirm(confirm));
                    Vec::new()
                }
            },
            Overlay::Form(form) => self.form_key(form, key),
            Overlay::Command(input) => self.command_line_key(input, key),
            Overlay::Copy(choices) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') => Vec::new(),
                KeyCode::Char(c) => match choices.iter().find(|choice| choice.key == c).cloned() {
                    Some(choice) => self.copy_effect(&choice),
                    None => {
                        self.overlay = Some(Overlay::Copy(choices));
                        Vec::new()
                    }
                },
                _ => {
                    self.overlay = Some(Overlay::Copy(choices));
                    Vec::new()
                }
            },
        }
    }

    fn command_line_key(&mut self, mut input: Input, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => Vec::new(),
            KeyCode::Tab => {
                let typed = input.value().trim().to_owned();
                let found = keymap::completions(self.view, &typed);
                if let Some(first) = found.first() {
                    // The longest prefix every completion shares; the whole name when
                    // there is one.
                    let mut common = first.to_string();
                    for name in &found[1..] {
                        while !name.starts_with(&common) {
                            common.pop();
                        }
                    }
                    input = Input::new(common);
                }
                self.overlay = Some(Overlay::Command(input));
                Vec::new()
            }
            KeyCode::Enter => {
                let typed = input.value().trim().to_owned();
                if typed.is_empty() {
                    return Vec::new();
                }
                let found = keymap::completions(self.view, &typed);
                let command = keymap::command_named(self.view, &typed).or_else(|| {
                    (found.len() == 1)
                        .then(|| keymap::command_named(self.view, found[0]))
                        .flatten()
                });
                match command {
                    Some(command) => self.command(command),
                    None => {
                        let names = keymap::completions(self.view, "");
                        let hint = if found.len() > 1 {
                            format!("it could be {}", found.join(", "))
                        } else {
                            format!("here: {}", names.join(", "))
                        };
                        self.say(
                            &format!(
                                "No command {}; {hint}.",
                                crate::text::visible_inline(&typed)
                            ),
                            false,
                        );
                        Vec::new()
                    }
                }
            }
            _ => {
                input.handle_event(&Event::Key(key));
                self.overlay = Some(Overlay::Command(input));
                Vec::new()
            }
        }
    }

    fn confirmed(&mut self, confirm: Confirm) -> Vec<Effect> {
        if let Some(why) = self.decisions_off() {
            self.say(&why, false);
            return Vec::new();
        }
        // The marks stay: what is settled leaves the list on the reload (and its mark
        // with it), what is refused stays marked, to be tried again.
        self.say(WORKING, true);
        vec![confirm.effect]
    }

    fn form_key(&mut self, mut form: Form, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.say("Cancelled; nothing was written.", true);
                return Vec::new();
            }
            KeyCode::Tab | KeyCode::Down => form.focus = (form.focus + 1) % form.fields.len(),
            KeyCode::BackTab | KeyCode::Up => {
                form.focus = (form.focus + form.fields.len() - 1) % form.fields.len();
            }
            KeyCode::Enter => {
                if let Some(why) = self.decisions_off() {
                    self.say(&why, false);
                    return Vec::new();
                }
                match submit(&form, self.older_than_ms) {
                    Ok(confirm) => {
                        self.overlay = Some(Overlay::Confirm(confirm));
                        return Vec::new();
                    }
                    Err(message) => form.error = Some(message),
                }
            }
            _ => {
                if let Some(field) = form.fields.get_mut(form.focus) {
                    field.input.handle_event(&Event::Key(key));
                }
                form.error = None;
            }
        }
        self.overlay = Some(Overlay::Form(form));
        Vec::new()
    }
}

/// The place of the one item that matches, when exactly one does.
fn only_one(matches: impl Iterator<Item = bool>) -> Option<usize> {
    let mut found = None;
    for (i, matched) in matches.enumerate() {
        if matched {
            if found.is_some() {
                return None;
            }
            found = Some(i);
        }
    }
    found
}
