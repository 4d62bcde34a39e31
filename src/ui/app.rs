//! The UI's state and its one way to change: `App::update(action)`, which returns the
//! effects to run and does no IO. Every key press is testable without a terminal.

mod answers;
mod decide;
mod detail;
mod editor;
mod keys;
mod open_confirm;
mod subjects;
mod verify;
mod words;
use crossterm::event::KeyEventKind;
use tui_input::Input;

use super::action::{Action, Effect, Gone};
use super::keymap::View;
use super::layout::{MIN_HEIGHT, MIN_WIDTH, Shape};
use crate::config::VerifySetup;
use crate::ledger::decision::Decision;
use crate::ledger::{Census, Entry, PageQuery, Status, UnreadableRow, time};
use crate::review::Draft;

pub use super::forms::{Confirm, Field, Form, FormKind, Settle, StillSending, short_key};
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
    pub older_than_ms: i64,
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

/// A draft's id and version, and the revision its payload is compared with.
type DiffOf = (i64, i64, i64);

/// The changes of a long payload, as [`App::long_diff`] gives them.
pub struct LongDiff {
    /// `+N -M`, lines added and removed.
    pub summary: String,
    /// The changed lines (`  + `, `  - `) with a few around each, and `  ⋯ N unchanged
    /// lines` between; visible text.
    pub lines: Vec<String>,
}

pub struct App {
    pub view: View,
    pub now: i64,
    pub size: (u16, u16),
    pub ledger_label: String,
    pub by: String,
    pub older_than_ms: i64,
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
    /// A start whose focus is a draft id that is not in the queue, waiting for that
    /// draft's own load (its key is looked up then); and whether one was, so that an id
    /// no draft has is searched for once, as any text.
    start_draft: Option<(i64, Option<View>)>,
    start_draft_tried: bool,
    /// The text a start searched the ledger for, until its page loads: the send whose
    /// key it is (or the one key it begins) is selected then, not merely the first
    /// row that holds it somewhere.
    ledger_focus: Option<String>,
    /// What this screen decided (`draft:ID`, or a key): a row that leaves its list
    /// for one of these left it by the person's own hand, and is not remarked on.
    decided_here: std::collections::HashSet<String>,
    /// The draft and revision the status line says this screen's approval counts
    /// toward, and when it said it: a new revision voids that approval, and the line
    /// must not go on saying it counts (AD11).
    approval_said: Option<(i64, i64, i64)>,
    /// Whether each draft's payload holds characters shown as marks, by draft id and
    /// version: every frame's rows ask, and a payload of megabytes takes a parse.
    suspicious: std::cell::RefCell<std::collections::HashMap<(i64, i64), bool>>,
    /// The changes of the draft whose payload is too long to diff every frame, by its
    /// id, version and the revision compared with: its summary, and the changed lines
    /// with a few around each (`render::compact_diff`), worked out once.
    long_diff: std::cell::RefCell<Option<(DiffOf, std::rc::Rc<LongDiff>)>>,
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
pub fn in_flight(entry: &Entry, now: i64, older_than_ms: i64) -> bool {
    entry.status() == Status::Pending
        && entry.error().is_none()
        && crate::ledger::placed_in_time(entry, now, older_than_ms)
        && time::parse_date(entry.claimed_at())
            .is_some_and(|at| now.saturating_sub(at) <= older_than_ms)
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
            start_draft: None,
            start_draft_tried: false,
            ledger_focus: None,
            decided_here: Default::default(),
            approval_said: None,
            suspicious: Default::default(),
            long_diff: Default::default(),
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
    /// What the layout needs of the state (`ui::layout`).
    pub fn shape(&self) -> Shape {
        Shape {
            size: self.size,
            status: self.status_text(),
            banner: self.banner_text(),
            typing: self.filter_input.is_some()
                || matches!(self.overlay, Some(Overlay::Command(_))),
            view: self.view,
            rows: self.row_count(self.view),
            no_queue: self.no_queue.is_some(),
            selected: self.selected(self.view),
        }
    }

    /// The banner as drawn, mark included, its text made visible.
    fn banner_text(&self) -> Option<String> {
        self.banner()
            .map(|text| format!("✗ {}", crate::text::visible_inline(&text)))
    }

    /// The status line's text as drawn, mark included, made visible.
    fn status_text(&self) -> Option<String> {
        self.status
            .as_ref()
            .map(|s| format!("✓ {}", crate::text::visible_inline(&s.text)))
    }

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

    /// Whether `draft`'s payload holds control, escape, bidi or invisible characters
    /// (shown as marks), worked out once for each version of it.
    pub fn draft_suspicious(&self, draft: &Draft) -> bool {
        let mut known = self.suspicious.borrow_mut();
        if let Some(&known) = known.get(&(draft.id, draft.version)) {
            return known;
        }
        // A new version of a draft replaces what its older ones said.
        known.retain(|(id, _), _| *id != draft.id);
        let suspicious = draft.suspicious();
        known.insert((draft.id, draft.version), suspicious);
        suspicious
    }

    /// What changed in `draft`'s payload since revision `base`, as a few lines around
    /// each change, worked out once for each version of it: for a payload too long to
    /// lay out and diff whole every frame (AJ4: a change at line 156,015 of a
    /// 5 MB revision was out of sight).
    pub fn long_diff(&self, draft: &Draft, base: i64) -> Option<std::rc::Rc<LongDiff>> {
        let id = (draft.id, draft.version, base);
        if let Some((known, diff)) = &*self.long_diff.borrow()
            && *known == id
        {
            return Some(std::rc::Rc::clone(diff));
        }
        let (current, older) = (draft.current()?, draft.revision_of(base)?);
        let diff = crate::review::render::reviewer_diff(
            older.revision,
            &older.payload,
            current.revision,
            &current.payload,
        );
        let long = std::rc::Rc::new(LongDiff {
            summary: diff.summary(),
            lines: crate::review::render::compact_diff(
                &diff,
                crate::review::render::CONTEXT_LINES,
                crate::review::render::LONGEST_LINE,
            )
            .lines()
            .map(str::to_owned)
            .collect(),
        });
        *self.long_diff.borrow_mut() = Some((id, std::rc::Rc::clone(&long)));
        Some(long)
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
        // A row matches by what it shows too: who and what its send is, as the
        // loaded lists know it where the decision does not say (AG3).
        let Some(all) = self.decisions.ready() else {
            return Vec::new();
        };
        let mut subjects = None;
        all.iter()
            .filter(|d| {
                decision_matches(d, filter) || {
                    let subjects = subjects.get_or_insert_with(|| self.subjects());
                    self.decision_who_in(d, subjects)
                        .is_some_and(|who| crate::ui::state::contains(&who, filter))
                }
            })
            .collect()
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
        self.still_sending(entry).may()
    }

    /// Whether `entry`'s attempt may still be sending: by what its claim records (its
    /// claimer's limit, its process seen here), as `show` and the ledger's own refusal
    /// judge it; only for a claimer that cannot be seen, by its age.
    pub fn still_sending(&self, entry: &Entry) -> StillSending {
        let running = crate::ledger::claimer::running(entry, self.now);
        if running.holds_off_failed() {
            StillSending::Known(running.describe())
        } else if running.may_still_run() && in_flight(entry, self.now, self.older_than_ms) {
            StillSending::Perhaps
        } else {
            StillSending::No
        }
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
            Action::Tick(now) => self.tick(now),
            Action::Changed => {
                // The selected item's history is asked for again with the rest.
                self.history_stale = true;
                self.reload()
            }
            Action::LedgerGone(gone) => {
                self.ledger_gone = Some(gone);
                Vec::new()
            }
            Action::LedgerBack { reopened } => self.ledger_back(reopened),
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
            Action::ApprovalsLoaded(result) => self.approvals_loaded(result),
            Action::PendingLoaded {
                entries,
                unreadable,
            } => self.pending_loaded(entries, unreadable),
            Action::UnknownLoaded(result) => self.unknown_loaded(result),
            Action::LedgerLoaded { query, result } => self.ledger_loaded(query, result),
            Action::DecisionsLoaded(result) => self.decisions_loaded(result),
            Action::ChainChecked(result) => {
                self.chain = loaded(result);
                Vec::new()
            }
            Action::DraftLoaded { id, result } => self.draft_loaded(id, result),
            Action::HistoryLoaded { subject, result } => self.history_loaded(subject, result),
            Action::CountsLoaded(result) => self.counts_loaded(result),
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
            Action::Done(outcome) => self.done(outcome),
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
                // A draft's id as the queue writes it: `007`, `+3` or `-1` is a key or
                // a text, never a draft (AH3: `007` opened draft 7's search for "7").
                _ if self.no_queue.is_none()
                    && !std::mem::replace(&mut self.start_draft_tried, true)
                    && let Ok(id) = focus.parse::<i64>()
                    && id > 0
                    && id.to_string() == focus =>
                {
                    // A draft that left the queue (dispatched, say): its send is found by
                    // its key, never by its id as text, which a digit of any key matches.
                    self.start_draft = Some((id, start.view));
                    return vec![Effect::LoadDraft(id)];
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
                    self.ledger_focus = Some(focus.clone());
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

    /// Starts at draft `id`, asked for by its id and not in the queue, now that its
    /// load answered: at its send, found by its key; or, with no such draft, at a search
    /// for the id as any text.
    pub(super) fn start_at_draft(
        &mut self,
        id: i64,
        view: Option<View>,
        found: Result<&Draft, &str>,
    ) -> Vec<Effect> {
        let focus = match found {
            Ok(draft) => draft.key.clone(),
            Err(_) => id.to_string(),
        };
        self.start = Start {
            view,
            focus: Some(focus),
        };
        let effects = self.apply_start();
        if let Ok(draft) = found {
            self.say(
                &format!(
                    "Draft {id} is {} and has left the queue: its send is looked up by its key {}.",
                    draft.state.as_str(),
                    short_key(&draft.key)
                ),
                true,
            );
        }
        effects
    }

    fn clamp(&mut self) {
        for view in View::ALL {
            let count = self.row_count(view);
            let s = &mut self.state_mut(view).selected;
            *s = (*s).min(count.saturating_sub(1));
        }
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
