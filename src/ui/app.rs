//! The UI's state and its one way to change: `App::update(action)`, which returns the
//! effects to run and does no IO. Every key press is testable without a terminal.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use tui_input::Input;
use tui_input::backend::crossterm::EventHandler;

use super::action::{Action, Effect, Gone};
use super::keymap::{Command, View, command_for};
use super::view::{MIN_HEIGHT, MIN_WIDTH};
use crate::ledger::{Census, Entry, PageQuery, Seen, Status, duration, time};
use crate::review::Draft;

/// Rows of the ledger view loaded at a time.
pub const LEDGER_PAGE: usize = 200;

#[derive(Clone, Debug, PartialEq)]
pub enum Loaded<T> {
    Loading,
    Ready(T),
    Failed(String),
}

impl<T> Loaded<T> {
    pub fn ready(&self) -> Option<&T> {
        match self {
            Loaded::Ready(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormKind {
    Approve {
        id: i64,
        revision: i64,
        /// The draft's version as shown: the decision applies only to it.
        version: i64,
        suspicious: bool,
        drifted: bool,
    },
    Reject {
        id: i64,
        version: i64,
    },
    MarkSent {
        key: String,
        /// Claimed less than `--older-than` ago: it may still be sending.
        in_flight: bool,
        /// The entry as it was shown: the decision applies only to it.
        seen: Seen,
    },
    MarkFailed {
        key: String,
        in_flight: bool,
        seen: Seen,
    },
}

/// The status while a confirmed decision is written (a busy ledger can take seconds):
/// neither a tick nor a cross, because nothing is decided yet.
pub const WORKING: &str = "Working… (writing to the ledger)";

#[derive(Clone, Debug)]
pub struct Field {
    pub label: &'static str,
    pub input: Input,
    pub required: bool,
}

#[derive(Clone, Debug)]
pub struct Form {
    pub kind: FormKind,
    pub title: String,
    pub fields: Vec<Field>,
    pub focus: usize,
    pub error: Option<String>,
}

impl Form {
    fn new(kind: FormKind, title: String, fields: Vec<Field>) -> Form {
        // The cursor starts in the first field without a default (the reason, the note).
        let focus = fields
            .iter()
            .position(|f| f.input.value().is_empty())
            .unwrap_or(0);
        Form {
            kind,
            title,
            fields,
            focus,
            error: None,
        }
    }

    pub fn value(&self, label: &str) -> String {
        self.fields
            .iter()
            .find(|f| f.label == label)
            .map(|f| f.input.value().trim().to_owned())
            .unwrap_or_default()
    }
}

/// An irreversible step, shown before it is taken.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirm {
    pub title: String,
    pub lines: Vec<String>,
    /// When set, only `y` confirms (Enter does not): the draft needs a second look.
    pub warning: Option<String>,
    pub effect: Effect,
}

#[derive(Clone, Debug)]
pub enum Overlay {
    Help,
    Form(Form),
    Confirm(Confirm),
}

pub struct Options {
    pub ledger_label: String,
    pub by: String,
    pub older_than_ms: f64,
    /// Why there is no review queue (a JSON Lines ledger), if there is none.
    pub no_queue: Option<String>,
    pub now: i64,
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
    pub counts: Option<Census>,
    /// Why the counts could not be had, when they could not.
    pub counts_error: Option<String>,
    /// The selected row of each view (index into its filtered list).
    pub selected: [usize; 3],
    /// The filter text of each view.
    pub filters: [String; 3],
    /// The filter being typed, when `/` was pressed.
    pub filter_input: Option<Input>,
    pub ledger_status: Option<Status>,
    pub ledger_offset: usize,
    /// How far the detail pane is scrolled (J/K); back to the top on a new selection.
    pub detail_scroll: u16,
    pub overlay: Option<Overlay>,
    /// What the last action did, or why it was refused.
    pub status: Option<(String, bool)>,
    /// The ledger's path no longer holds the file opened: decisions are off.
    pub ledger_gone: Option<Gone>,
    /// The open form or confirmation was made on a ledger file since replaced: it
    /// cannot be confirmed.
    pub overlay_stale: bool,
    pub quit: bool,
}

fn slot(view: View) -> usize {
    match view {
        View::Approvals => 0,
        View::Unknown => 1,
        View::Ledger => 2,
    }
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
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
            counts: None,
            counts_error: None,
            selected: [0; 3],
            filters: Default::default(),
            filter_input: None,
            ledger_status: None,
            ledger_offset: 0,
            detail_scroll: 0,
            overlay: None,
            status: None,
            ledger_gone: None,
            overlay_stale: false,
            quit: false,
        }
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
        effects
    }

    pub fn ledger_query(&self) -> PageQuery {
        let search = &self.filters[slot(View::Ledger)];
        PageQuery {
            status: self.ledger_status,
            search: (!search.is_empty()).then(|| search.clone()),
            offset: self.ledger_offset,
            limit: LEDGER_PAGE,
        }
    }

    /// The drafts the Approvals view lists, after its filter.
    pub fn visible_drafts(&self) -> Vec<&Draft> {
        let filter = &self.filters[slot(View::Approvals)];
        self.approvals
            .ready()
            .map(|drafts| {
                drafts
                    .iter()
                    .filter(|d| filter.is_empty() || draft_matches(d, filter))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The pending entries the Unknown view lists, after its filter.
    pub fn visible_unknown(&self) -> Vec<&Entry> {
        let filter = &self.filters[slot(View::Unknown)];
        self.unknown
            .ready()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| filter.is_empty() || entry_matches(e, filter))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn visible_ledger(&self) -> Vec<&Entry> {
        self.ledger
            .ready()
            .map(|entries| entries.iter().collect())
            .unwrap_or_default()
    }

    fn row_count(&self) -> usize {
        match self.view {
            View::Approvals => self.visible_drafts().len(),
            View::Unknown => self.visible_unknown().len(),
            View::Ledger => self.visible_ledger().len(),
        }
    }

    pub fn selected(&self, view: View) -> usize {
        self.selected[slot(view)]
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

    /// A pending entry claimed more recently than `--older-than`: maybe still sending.
    pub fn maybe_in_flight(&self, entry: &Entry) -> bool {
        time::parse_date(entry.claimed_at())
            .is_none_or(|at| (self.now - at) as f64 <= self.older_than_ms)
    }

    /// Rows a page key moves by: what fits in the list.
    fn page_rows(&self) -> usize {
        usize::from(self.size.1.saturating_sub(12)).max(1)
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Action::Key(_) => Vec::new(),
            Action::Mouse(mouse) => {
                if self.overlay.is_some() || self.too_small() {
                    return Vec::new();
                }
                match mouse.kind {
                    MouseEventKind::ScrollDown => self.command(Command::Down),
                    MouseEventKind::ScrollUp => self.command(Command::Up),
                    _ => Vec::new(),
                }
            }
            Action::Resize(w, h) => {
                self.size = (w, h);
                Vec::new()
            }
            Action::Tick(now) => {
                self.now = now;
                Vec::new()
            }
            Action::Changed => self.reload(),
            Action::LedgerGone(gone) => {
                self.ledger_gone = Some(gone);
                Vec::new()
            }
            Action::LedgerBack { reopened } => {
                let was_gone = self.ledger_gone.take().is_some();
                if reopened {
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
            | Action::LedgerLoaded { .. }
            | Action::CountsLoaded(_)
                if self.ledger_gone.is_some() =>
            {
                Vec::new()
            }
            Action::ApprovalsLoaded(result) => {
                let keep = self.selected_draft().map(|d| d.id);
                self.approvals = loaded(result);
                if let Some(id) = keep
                    && let Some(i) = self.visible_drafts().iter().position(|d| d.id == id)
                {
                    self.selected[slot(View::Approvals)] = i;
                }
                self.clamp();
                Vec::new()
            }
            Action::UnknownLoaded(result) => {
                let keep = self.selected_unknown().map(|e| e.key().to_owned());
                self.unknown = loaded(result);
                if let Some(key) = keep
                    && let Some(i) = self.visible_unknown().iter().position(|e| e.key() == key)
                {
                    self.selected[slot(View::Unknown)] = i;
                }
                self.clamp();
                Vec::new()
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
                    self.selected[slot(View::Ledger)] = i;
                }
                self.clamp();
                Vec::new()
            }
            Action::CountsLoaded(result) => {
                match result {
                    Ok(census) => {
                        self.counts = Some(census);
                        self.counts_error = None;
                    }
                    Err(e) => self.counts_error = Some(e),
                }
                Vec::new()
            }
            Action::Done { message, ok } => {
                self.status = Some((message, ok));
                self.reload()
            }
        }
    }

    fn clamp(&mut self) {
        for view in View::ALL {
            let count = match view {
                View::Approvals => self.visible_drafts().len(),
                View::Unknown => self.visible_unknown().len(),
                View::Ledger => self.visible_ledger().len(),
            };
            let s = &mut self.selected[slot(view)];
            *s = (*s).min(count.saturating_sub(1));
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
        if self.overlay.is_none() {
            self.overlay_stale = false;
        }
        if let Some(overlay) = self.overlay.take() {
            return self.overlay_key(overlay, key);
        }
        if let Some(input) = self.filter_input.take() {
            return self.filter_key(input, key);
        }
        // Esc backs out of whatever is narrowing the view: its filter.
        if key.code == KeyCode::Esc && !self.filters[slot(self.view)].is_empty() {
            self.filters[slot(self.view)].clear();
            return self.after_filter();
        }
        match command_for(self.view, &key) {
            Some(command) => self.command(command),
            None => Vec::new(),
        }
    }

    fn filter_key(&mut self, mut input: Input, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.filters[slot(self.view)].clear();
                self.after_filter()
            }
            KeyCode::Enter => {
                self.filters[slot(self.view)] = input.value().trim().to_owned();
                self.after_filter()
            }
            _ => {
                input.handle_event(&Event::Key(key));
                self.filter_input = Some(input);
                Vec::new()
            }
        }
    }

    fn after_filter(&mut self) -> Vec<Effect> {
        self.selected[slot(self.view)] = 0;
        if self.view == View::Ledger {
            self.ledger_offset = 0;
            self.ledger = Loaded::Loading;
            return vec![Effect::LoadLedger(self.ledger_query())];
        }
        Vec::new()
    }

    fn command(&mut self, command: Command) -> Vec<Effect> {
        if matches!(
            command,
            Command::Approve
                | Command::Reject
                | Command::Recheck
                | Command::MarkSent
                | Command::MarkFailed
        ) && let Some(why) = self.decisions_off()
        {
            self.say(&why, false);
            return Vec::new();
        }
        let rows = self.row_count();
        let s = slot(self.view);
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
        }
        match command {
            Command::ScrollDetailDown => self.detail_scroll = self.detail_scroll.saturating_add(3),
            Command::ScrollDetailUp => self.detail_scroll = self.detail_scroll.saturating_sub(3),
            Command::Quit => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            Command::NextView => self.view = self.view.next(),
            Command::PreviousView => self.view = self.view.previous(),
            Command::Show(view) => self.view = view,
            Command::Up => self.selected[s] = self.selected[s].saturating_sub(1),
            Command::Down => return self.move_down(1, rows),
            Command::PageUp => {
                self.selected[s] = self.selected[s].saturating_sub(self.page_rows());
                if self.view == View::Ledger && self.selected[s] == 0 && self.ledger_offset > 0 {
                    return self.turn_ledger_page(false);
                }
            }
            Command::PageDown => return self.move_down(self.page_rows(), rows),
            Command::Top => self.selected[s] = 0,
            Command::Bottom => self.selected[s] = rows.saturating_sub(1),
            Command::Help => self.overlay = Some(Overlay::Help),
            Command::Filter => {
                self.filter_input = Some(Input::new(self.filters[s].clone()));
            }
            Command::CycleStatus => {
                self.ledger_status = match self.ledger_status {
                    None => Some(Status::Pending),
                    Some(Status::Pending) => Some(Status::Sent),
                    Some(Status::Sent) => Some(Status::Failed),
                    Some(Status::Failed) => None,
                };
                self.ledger_offset = 0;
                self.selected[s] = 0;
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
            Command::Reject => {
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
            Command::MarkSent | Command::MarkFailed => {
                let sent = command == Command::MarkSent;
                if let Some(entry) = self.selected_unknown() {
                    let key = entry.key().to_owned();
                    let in_flight = self.maybe_in_flight(entry);
                    let seen = Seen::entry(entry);
                    let short = crate::text::visible_inline(&short_key(&key)).into_owned();
                    let mut fields = vec![field("Note", "", false), field("Name", &self.by, true)];
                    let (kind, title) = if sent {
                        fields.push(field("Provider id", "", false));
                        (
                            FormKind::MarkSent {
                                key,
                                in_flight,
                                seen,
                            },
                            format!("Mark {short} sent"),
                        )
                    } else {
                        (
                            FormKind::MarkFailed {
                                key,
                                in_flight,
                                seen,
                            },
                            format!("Mark {short} failed"),
                        )
                    };
                    self.overlay = Some(Overlay::Form(Form::new(kind, title, fields)));
                } else {
                    self.say("No unknown send selected.", false);
                }
            }
        }
        Vec::new()
    }

    fn move_down(&mut self, by: usize, rows: usize) -> Vec<Effect> {
        let s = slot(self.view);
        let wanted = self.selected[s] + by;
        if self.view == View::Ledger && wanted >= rows && rows == LEDGER_PAGE {
            return self.turn_ledger_page(true);
        }
        self.selected[s] = wanted.min(rows.saturating_sub(1));
        Vec::new()
    }

    /// Loads the next (or previous) page of the ledger view from the store.
    fn turn_ledger_page(&mut self, forward: bool) -> Vec<Effect> {
        let s = slot(View::Ledger);
        if forward {
            self.ledger_offset += LEDGER_PAGE;
            self.selected[s] = 0;
        } else {
            self.ledger_offset = self.ledger_offset.saturating_sub(LEDGER_PAGE);
            self.selected[s] = LEDGER_PAGE - 1;
        }
        self.ledger = Loaded::Loading;
        vec![Effect::LoadLedger(self.ledger_query())]
    }

    fn open_approve(&mut self) {
        let Some(draft) = self.selected_draft() else {
            self.say("No draft selected.", false);
            return;
        };
        let drift = draft.drift();
        let kind = FormKind::Approve {
            id: draft.id,
            revision: draft.revision,
            version: draft.version,
            suspicious: draft.suspicious(),
            drifted: drift.changed > 0,
        };
        let title = format!("Approve draft {} (revision {})", draft.id, draft.revision);
        let fields = vec![
            field("TTL", "12h", true),
            field("Name", &self.by, true),
            field("Note", "", false),
        ];
        self.overlay = Some(Overlay::Form(Form::new(kind, title, fields)));
    }

    /// Whether the status line says a decision is still being written.
    pub fn working(&self) -> bool {
        matches!(&self.status, Some((message, _)) if message == WORKING)
    }

    fn say(&mut self, message: &str, ok: bool) {
        self.status = Some((message.to_owned(), ok));
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
        }
    }

    fn confirmed(&mut self, confirm: Confirm) -> Vec<Effect> {
        if let Some(why) = self.decisions_off() {
            self.say(&why, false);
            return Vec::new();
        }
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
                match self.submit(&form) {
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

    /// Checks a form and turns it into the confirmation of what it will do.
    fn submit(&self, form: &Form) -> Result<Confirm, String> {
        if let Some(missing) = form
            .fields
            .iter()
            .find(|f| f.required && f.input.value().trim().is_empty())
        {
            return Err(format!("{} is needed.", missing.label));
        }
        let by = form.value("Name");
        let optional = |label: &str| Some(form.value(label)).filter(|v| !v.is_empty());
        Ok(match &form.kind {
            FormKind::Approve {
                id,
                revision,
                version,
                suspicious,
                drifted,
            } => {
                let ttl = form.value("TTL");
                let ms = duration::parse_duration(&ttl).map_err(|e| format!("TTL: {e}"))?;
                if ms <= 0.0 {
                    return Err("TTL must be longer than zero.".into());
                }
                let mut lines = vec![format!(
                    "Approve draft {id} (revision {revision}) for {ttl}, as {by}?"
                )];
                if *drifted {
                    lines.push(
                        "Its facts have changed since it was submitted: dispatch will refuse (stale_facts) until they match again."
                            .into(),
                    );
                }
                Confirm {
                    title: "Approve".into(),
                    lines,
                    warning: suspicious.then(|| {
                        "The payload holds control, escape, bidi or invisible characters (shown as marks). Approve it anyway? Press y."
                            .to_owned()
                    }),
                    effect: Effect::Approve {
                        id: *id,
                        revision: *revision,
                        version: *version,
                        ttl,
                        by,
                        note: optional("Note"),
                    },
                }
            }
            FormKind::Reject { id, version } => {
                let reason = form.value("Reason");
                Confirm {
                    title: "Reject".into(),
                    lines: vec![
                        format!("Reject draft {id} as {by}?"),
                        format!("Reason: {reason}"),
                    ],
                    warning: None,
                    effect: Effect::Reject {
                        id: *id,
                        version: *version,
                        reason,
                        by,
                    },
                }
            }
            FormKind::MarkSent {
                key,
                in_flight,
                seen,
            }
            | FormKind::MarkFailed {
                key,
                in_flight,
                seen,
            } => {
                let sent = matches!(form.kind, FormKind::MarkSent { .. });
                let short = short_key(key);
                let then = if sent {
                    "It will not be sent again."
                } else {
                    "The next attempt for this key will send it."
                };
                let mut lines = vec![format!(
                    "Mark {short} {} as {by}? {then}",
                    if sent { "sent" } else { "failed" }
                )];
                if let Some(note) = optional("Note") {
                    lines.push(format!("Note: {note}"));
                }
                if *in_flight {
                    lines.push(format!(
                        "It was claimed less than {} ago and may still be sending: check with the provider first.",
                        duration::format_duration(self.older_than_ms)
                    ));
                }
                Confirm {
                    title: if sent { "Mark sent" } else { "Mark failed" }.into(),
                    lines,
                    warning: None,
                    effect: Effect::Resolve {
                        key: key.clone(),
                        status: if sent { Status::Sent } else { Status::Failed },
                        by,
                        note: optional("Note"),
                        provider_id: if sent { optional("Provider id") } else { None },
                        seen: seen.clone(),
                    },
                }
            }
        })
    }
}

fn field(label: &'static str, value: &str, required: bool) -> Field {
    Field {
        label,
        input: Input::new(value.to_owned()),
        required,
    }
}

fn loaded<T>(result: Result<T, String>) -> Loaded<T> {
    match result {
        Ok(t) => Loaded::Ready(t),
        Err(e) => Loaded::Failed(e),
    }
}

/// A key as a person reads it: the first 12 characters of a 64-character hash.
pub fn short_key(key: &str) -> String {
    if key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
        format!("{}…", &key[..12])
    } else {
        key.to_owned()
    }
}

fn draft_matches(draft: &Draft, filter: &str) -> bool {
    contains(&draft.key, filter)
        || draft.id.to_string() == filter
        || draft.meta.as_ref().is_some_and(|m| {
            m.values()
                .any(|v| v.as_str().is_some_and(|s| contains(s, filter)))
        })
}

fn entry_matches(entry: &Entry, filter: &str) -> bool {
    contains(entry.key(), filter)
        || entry.error().is_some_and(|e| contains(e, filter))
        || entry.meta().is_some_and(|m| {
            m.values()
                .any(|v| v.as_str().is_some_and(|s| contains(s, filter)))
        })
}
