//! Keys and the mouse: what each key does in each view and overlay, the filter, the
//! command line, and a click on a row.

use super::{App, LEDGER_PAGE, Overlay, WORKING};
use crate::ledger::Status;
use crate::ui::action::Effect;
use crate::ui::forms::submit;
use crate::ui::forms::{Confirm, Form};
use crate::ui::keymap::{self, Command, View, command_for};
use crate::ui::layout::{self, Hit};
use crate::ui::state::Loaded;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEventKind};
use tui_input::Input;
use tui_input::backend::crossterm::EventHandler;

impl App {
    pub(super) fn mouse(&mut self, kind: MouseEventKind, column: u16, row: u16) -> Vec<Effect> {
        // Only a left click and the wheel do anything: a pointer moving over the screen
        // (reported with every motion) does not lay the frame out.
        if !matches!(
            kind,
            MouseEventKind::Down(MouseButton::Left)
                | MouseEventKind::ScrollDown
                | MouseEventKind::ScrollUp
        ) {
            return Vec::new();
        }
        // A click or the wheel is the person acting, as a key is: what the status said
        // has been read (a refusal stayed beside whatever row was clicked, AG6).
        if !self.working() {
            self.status = None;
        }
        let shape = self.shape();
        match (kind, layout::hit(&shape, column, row)) {
            (MouseEventKind::Down(MouseButton::Left), Hit::Row(i)) => {
                if i < shape.rows {
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

    pub(super) fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
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

    pub(super) fn filter_key(&mut self, mut input: Input, key: KeyEvent) -> Vec<Effect> {
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

    pub(super) fn set_filter(&mut self, text: String) -> Vec<Effect> {
        let view = self.view;
        // The row selected stays selected when the new filter shows it (clearing a
        // filter, say): a person's place is not moved under them.
        let kept = self.selected_identity(view);
        let state = self.state_mut(view);
        state.filter = text;
        state.selected = 0;
        if let Some(kept) = kept
            && let Some(at) = self.position_of(view, &kept)
        {
            self.state_mut(view).selected = at;
        } else {
            self.detail_scroll = 0;
            self.diff_base = None;
        }
        if view == View::Ledger {
            self.ledger_offset = 0;
            self.ledger = Loaded::Loading;
            return vec![Effect::LoadLedger(self.ledger_query())];
        }
        Vec::new()
    }

    /// What the selected row of `view` is (a draft's id, an entry's key, a decision's
    /// id), to find it again in another order or filter; None for the ledger's page,
    /// which the store loads again.
    fn selected_identity(&self, view: View) -> Option<String> {
        match view {
            View::Approvals => self.selected_draft().map(|d| d.id.to_string()),
            View::Unknown => self.selected_unknown().map(|e| e.key().to_owned()),
            View::Decisions => self
                .selected_decision()
                .and_then(|d| d.id)
                .map(|id| id.to_string()),
            View::Ledger => None,
        }
    }

    /// Where the row `identity` ([`App::selected_identity`]) stands in `view` now.
    fn position_of(&self, view: View, identity: &str) -> Option<usize> {
        match view {
            View::Approvals => self
                .visible_drafts()
                .iter()
                .position(|d| d.id.to_string() == identity),
            View::Unknown => self
                .visible_unknown()
                .iter()
                .position(|e| e.key() == identity),
            View::Decisions => self
                .visible_decisions()
                .iter()
                .position(|d| d.id.map(|id| id.to_string()).as_deref() == Some(identity)),
            View::Ledger => None,
        }
    }

    /// The commands that write a decision.
    pub(super) fn decides(command: Command) -> bool {
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

    pub(super) fn command(&mut self, command: Command) -> Vec<Effect> {
        if Self::decides(command)
            && let Some(why) = self.decisions_off()
        {
            self.say(&why, false);
            return Vec::new();
        }
        let view = self.view;
        let rows = self.row_count(view);
        if Self::moves_selection(command) {
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
            Command::PageUp => return self.page_up(),
            Command::PageDown => return self.move_down(self.page_rows(), rows),
            Command::Top => self.state_mut(view).selected = 0,
            Command::Bottom => self.state_mut(view).selected = rows.saturating_sub(1),
            Command::Help => self.overlay = Some(Overlay::Help),
            Command::CommandLine => self.overlay = Some(Overlay::Command(Input::default())),
            Command::Filter => {
                self.filter_input = Some(Input::new(self.filter(view).to_owned()));
            }
            Command::Back => return self.clear_marks_or_filter(),
            Command::ToggleMark => self.toggle_mark(),
            Command::MarkAll => self.mark_all(),
            Command::Sort => self.next_sort(),
            Command::CycleStatus => return self.cycle_status(),
            Command::Approve if self.no_queue.is_some() => {
                self.say(
                    "This ledger has no review queue (it is a JSON Lines file).",
                    false,
                );
            }
            Command::Approve => self.open_approve(),
            Command::Reject => self.open_reject(),
            Command::Recheck => return self.recheck_selected(),
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

    /// Whether `command` moves the selection or the view, which starts the detail pane
    /// afresh (at its top, with no diff base).
    fn moves_selection(command: Command) -> bool {
        matches!(
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
        )
    }

    /// A page up; at the top of a ledger page past the first, the page before.
    fn page_up(&mut self) -> Vec<Effect> {
        let view = self.view;
        let by = self.page_rows();
        let s = &mut self.state_mut(view).selected;
        *s = s.saturating_sub(by);
        let at_top = *s == 0;
        if view == View::Ledger && at_top && self.ledger_offset > 0 {
            return self.turn_ledger_page(false);
        }
        Vec::new()
    }

    /// Esc: clears the view's marks, else its filter.
    fn clear_marks_or_filter(&mut self) -> Vec<Effect> {
        let state = self.state_mut(self.view);
        if !state.marked.is_empty() {
            let n = state.marked.len();
            state.marked.clear();
            self.say(&format!("Cleared {n} mark(s)."), true);
        } else if !state.filter.is_empty() {
            return self.set_filter(String::new());
        }
        Vec::new()
    }

    /// Sorts the view by the next order, from its first row.
    fn next_sort(&mut self) {
        let view = self.view;
        let state = self.state_mut(view);
        state.sort = state.sort.next();
        state.selected = 0;
        let label = state.sort.label_for(view);
        self.say(&format!("Sorted {label}."), true);
    }

    /// Shows the ledger's entries of the next status (all, pending, sent, failed),
    /// loaded afresh from the first page.
    fn cycle_status(&mut self) -> Vec<Effect> {
        self.ledger_status = match self.ledger_status {
            None => Some(Status::Pending),
            Some(Status::Pending) => Some(Status::Sent),
            Some(Status::Sent) => Some(Status::Failed),
            Some(Status::Failed) => None,
        };
        self.ledger_offset = 0;
        let view = self.view;
        self.state_mut(view).selected = 0;
        self.ledger = Loaded::Loading;
        vec![Effect::LoadLedger(self.ledger_query())]
    }

    /// Runs the selected draft's recheck command, or says why not.
    fn recheck_selected(&mut self) -> Vec<Effect> {
        match self.selected_draft() {
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
        }
        Vec::new()
    }

    pub(super) fn move_down(&mut self, by: usize, rows: usize) -> Vec<Effect> {
        let view = self.view;
        let wanted = self.selected(view) + by;
        if view == View::Ledger && wanted >= rows && rows == LEDGER_PAGE {
            return self.turn_ledger_page(true);
        }
        self.state_mut(view).selected = wanted.min(rows.saturating_sub(1));
        Vec::new()
    }

    /// Loads the next (or previous) page of the ledger view from the store.
    pub(super) fn turn_ledger_page(&mut self, forward: bool) -> Vec<Effect> {
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

    pub(super) fn overlay_key(&mut self, overlay: Overlay, key: KeyEvent) -> Vec<Effect> {
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
                KeyCode::Enter if !confirm.strict() => self.confirmed(confirm),
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

    pub(super) fn command_line_key(&mut self, mut input: Input, key: KeyEvent) -> Vec<Effect> {
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

    pub(super) fn confirmed(&mut self, confirm: Confirm) -> Vec<Effect> {
        if let Some(why) = self.decisions_off() {
            self.say(&why, false);
            return Vec::new();
        }
        // The marks stay: what is settled leaves the list on the reload (and its mark
        // with it), what is refused stays marked, to be tried again.
        self.say(WORKING, true);
        self.note_decided(&confirm.effect);
        vec![confirm.effect]
    }

    /// Notes what `effect` decides, so that its row leaving the list is not said to be
    /// someone else's doing.
    fn note_decided(&mut self, effect: &Effect) {
        match effect {
            Effect::Approve { id, .. } | Effect::Reject { id, .. } => {
                self.decided_here.insert(format!("draft:{id}"));
            }
            Effect::Resolve { key, .. } => {
                self.decided_here.insert(key.clone());
            }
            Effect::Batch(effects) => effects.iter().for_each(|e| self.note_decided(e)),
            _ => {}
        }
    }

    pub(super) fn form_key(&mut self, mut form: Form, key: KeyEvent) -> Vec<Effect> {
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
                self.votes_since_the_form(&mut form);
                match submit(&form, self.older_than_ms) {
                    Ok(mut confirm) => {
                        self.another_name(&mut confirm);
                        self.overlay = Some(Overlay::Confirm(confirm));
                        // What loaded while the form was open (AK1).
                        self.confirm_open_changed();
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

    /// An approve form whose draft got other people's votes while it was open (and
    /// nothing else: the same revision): its confirmation counts them, "makes 2 of 2
    /// (after sam)", where it said "1 of 2" and Enter completed the approval (AK1).
    /// The version it was opened on stays, so that the store judges what changed.
    fn votes_since_the_form(&self, form: &mut crate::ui::forms::Form) {
        let crate::ui::forms::FormKind::Approve {
            id,
            revision,
            version,
            quorum,
            ..
        } = &mut form.kind
        else {
            return;
        };
        let Some(draft) = self.loaded_draft(*id) else {
            return;
        };
        if draft.revision == *revision && draft.version != *version {
            *quorum = self.quorum_shown(draft);
        }
    }

    /// An approval recorded under another name than this screen's: a vote that
    /// counts as that person's, so that one person at one screen could make a
    /// two-person approval alone (operator's shift, session 43: AJ3). Said, and only
    /// `y` confirms; names are what each person says they are, here as in `--by`.
    fn another_name(&self, confirm: &mut crate::ui::forms::Confirm) {
        let crate::ui::action::Effect::Approve { by, .. } = &confirm.effect else {
            return;
        };
        if crate::review::quorum::same_person(by, &self.by) {
            return;
        }
        let said = format!(
            "This screen was opened as {}: this approval is recorded as {}'s vote, not yours. Press y only if {} asked you to record it.",
            crate::text::visible_inline(&self.by),
            crate::text::visible_inline(by),
            crate::text::visible_inline(by),
        );
        confirm.warn_first(said);
    }
}
