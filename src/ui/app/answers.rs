//! What the runtime answers the screen with: each kind of load (the selection kept on its
//! row), the clock's tick, a ledger back, and an effect done (its words on the status
//! line, and a reload).

use super::{App, CHAIN_RECHECK_MS, KeptEdit, LEDGER_PAGE, Overlay, STATUS_FADE_MS, entry_who};
use crate::ledger::decision::Decision;
use crate::ledger::{Census, Entry, PageQuery, UnreadableRow};
use crate::review::Draft;
use crate::ui::action::{Action, Effect, Outcome};
use crate::ui::keymap::View;
use crate::ui::state::Loaded;
use crate::ui::state::loaded;

impl App {
    pub(super) fn tick(&mut self, now: i64) -> Vec<Effect> {
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

    pub(super) fn ledger_back(&mut self, reopened: bool) -> Vec<Effect> {
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

    pub(super) fn approvals_loaded(&mut self, result: Result<Vec<Draft>, String>) -> Vec<Effect> {
        let keep = self.selected_draft().map(|d| {
            let who = d.recipient_and_intent().map(|w| format!(" ({w})"));
            (d.id, who.unwrap_or_default())
        });
        let loaded_ok = result.is_ok();
        self.approvals = loaded(result.map(|drafts| self.with_all_revisions(drafts)));
        if let Some((id, who)) = keep {
            match self.visible_drafts().iter().position(|d| d.id == id) {
                Some(i) => self.state_mut(View::Approvals).selected = i,
                None if loaded_ok => {
                    let now_on = self.selected_draft().map(|d| format!("draft {}", d.id));
                    self.left_elsewhere(
                        View::Approvals,
                        &format!("draft:{id}"),
                        &format!("Draft {id}{who}"),
                        now_on,
                    );
                }
                None => {}
            }
        }
        self.approval_voided();
        self.confirm_open_changed();
        self.prune_marks();
        self.after_load()
    }

    /// When the status line still says that this screen's approval of a draft's
    /// revision counts, and the draft has a newer revision now, says that it no
    /// longer does: a vote or an approval covers the revision it was given for only.
    fn approval_voided(&mut self) {
        let Some((id, revision, said_at)) = self.approval_said else {
            return;
        };
        if self.status.as_ref().is_none_or(|s| s.at != said_at) {
            self.approval_said = None;
            return;
        }
        let Loaded::Ready(drafts) = &self.approvals else {
            return;
        };
        let Some(draft) = drafts.iter().find(|d| d.id == id) else {
            // Rejected, withdrawn or dispatched by someone else since (AJ5: the line
            // went on saying one more approval was needed, or how to send it).
            self.approval_said = None;
            self.say(
                &format!(
                    "Draft {id} has left the queue since your approval: someone else rejected, withdrew or dispatched it (view 4 says who)."
                ),
                false,
            );
            return;
        };
        if draft.revision == revision {
            return;
        }
        let by = draft
            .revisions
            .iter()
            .find(|r| r.revision == draft.revision)
            .and_then(|r| r.submitted_by.as_deref())
            .map(|by| format!(" by {}", crate::text::visible_inline(by)))
            .unwrap_or_default();
        let text = format!(
            "Draft {id} has a new revision {}{by}: your approval of revision {revision} no longer counts, and it needs approval again.",
            draft.revision
        );
        self.approval_said = None;
        self.say(&text, false);
    }

    /// Says that the row the person had selected in `view` (`subject`, named `name`)
    /// left it by someone else's decision, and where the selection is now (`now_on`),
    /// unless this screen decided it or the status line says something else already
    /// (AD5: the selection moved without a word, onto another send).
    fn left_elsewhere(&mut self, view: View, subject: &str, name: &str, now_on: Option<String>) {
        if self.decided_here.remove(subject) || self.view != view || self.status.is_some() {
            return;
        }
        let now_on = now_on.map_or_else(
            || "Nothing is selected now.".to_owned(),
            |on| format!("The selection is on {on} now."),
        );
        self.say(
            &format!(
                "{} left this list: someone else decided it meanwhile (view 4 says who). {now_on}",
                crate::text::visible_inline(name)
            ),
            true,
        );
    }

    pub(super) fn pending_loaded(
        &mut self,
        entries: Result<Vec<Entry>, String>,
        unreadable: Vec<UnreadableRow>,
    ) -> Vec<Effect> {
        if let Some(census) = &mut self.counts {
            census.unreadable = unreadable.clone();
        }
        self.unreadable_pending = Some(unreadable);
        self.update(Action::UnknownLoaded(entries))
    }

    pub(super) fn unknown_loaded(&mut self, result: Result<Vec<Entry>, String>) -> Vec<Effect> {
        let keep = self
            .selected_unknown()
            .map(|e| (e.key().to_owned(), entry_who(e)));
        let loaded_ok = result.is_ok();
        self.unknown = loaded(result);
        if let Some((key, who)) = keep {
            match self.visible_unknown().iter().position(|e| e.key() == key) {
                Some(i) => self.state_mut(View::Unknown).selected = i,
                None if loaded_ok => {
                    let now_on = self.selected_unknown().map(entry_who);
                    self.left_elsewhere(View::Unknown, &key, &who, now_on);
                }
                None => {}
            }
        }
        self.prune_marks();
        self.prune_verified();
        self.confirm_open_changed();
        self.after_load()
    }

    pub(super) fn ledger_loaded(
        &mut self,
        query: PageQuery,
        result: Result<Vec<Entry>, String>,
    ) -> Vec<Effect> {
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
        if let Some(focus) = self.ledger_focus.take() {
            self.select_focus(&focus);
        }
        self.confirm_open_changed();
        self.after_load()
    }

    /// Selects, in a ledger page searched for `focus` at start, the send whose key it
    /// is, or the one key it begins; when neither, says that the first of several
    /// sends that hold it is selected (a digit or a word may be in many).
    fn select_focus(&mut self, focus: &str) {
        let page = self.visible_ledger();
        let exact = page.iter().position(|e| e.key() == focus);
        let prefix = || {
            let mut starting = page
                .iter()
                .enumerate()
                .filter(|(_, e)| e.key().starts_with(focus));
            match (starting.next(), starting.next()) {
                (Some((i, _)), None) => Some(i),
                _ => None,
            }
        };
        let count = page.len();
        match exact.or_else(prefix) {
            Some(i) => self.state_mut(View::Ledger).selected = i,
            None if count > 1 => {
                let more = if count >= LEDGER_PAGE { " or more" } else { "" };
                self.say(
                    &format!(
                        "{count}{more} sends in the ledger hold {}, none as its key: the first is selected.",
                        crate::text::visible_inline(focus)
                    ),
                    true,
                );
            }
            None => {}
        }
    }

    pub(super) fn decisions_loaded(
        &mut self,
        result: Result<Vec<Decision>, String>,
    ) -> Vec<Effect> {
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

    pub(super) fn draft_loaded(
        &mut self,
        id: i64,
        result: Result<Box<Draft>, String>,
    ) -> Vec<Effect> {
        if let Some((_, view)) = self.start_draft.take_if(|(wanted, _)| *wanted == id) {
            return self.start_at_draft(id, view, result.as_deref().map_err(String::as_str));
        }
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

    pub(super) fn history_loaded(
        &mut self,
        subject: String,
        result: Result<Vec<Decision>, String>,
    ) -> Vec<Effect> {
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

    pub(super) fn counts_loaded(&mut self, result: Result<Census, String>) -> Vec<Effect> {
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

    pub(super) fn done(&mut self, outcome: Outcome) -> Vec<Effect> {
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
        self.approval_said = match &outcome {
            Outcome::Voted { id, revision, .. } | Outcome::Approved { id, revision, .. } => {
                Some((*id, *revision, self.now))
            }
            _ => None,
        };
        match outcome {
            Outcome::Paged(_) | Outcome::Copied { .. } => Vec::new(),
            _ => self.reload(),
        }
    }
}
