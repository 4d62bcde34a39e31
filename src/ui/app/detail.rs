//! The detail pane's tools: what the payload is compared with, every revision loaded, the
//! pager, and copying a key, an id or the payload.

use super::{App, CopyChoice, Overlay};
use crate::ledger::Entry;
use crate::review::Draft;
use crate::ui::action::Effect;
use crate::ui::forms::short_key;
use crate::ui::keymap::View;
use crate::ui::page;

impl App {
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
    pub(super) fn copy_effect(&mut self, choice: &CopyChoice) -> Vec<Effect> {
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

    pub(super) fn copy(&mut self) -> Vec<Effect> {
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
    pub(super) fn with_all_revisions(&mut self, mut drafts: Vec<Draft>) -> Vec<Draft> {
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

    pub(super) fn move_diff_base(&mut self, older: bool) -> Vec<Effect> {
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
            // `[` compares with an older revision: it goes on to one once they load.
            self.say(
                &format!("Loading every revision of draft {id}, to compare with an older one…"),
                true,
            );
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

    pub(super) fn page(&mut self) -> Vec<Effect> {
        let page = match self.view {
            View::Approvals => self.selected_draft().map(|draft| {
                (
                    format!("draft {}", draft.id),
                    page::draft_text(draft, self.diff_base_of(draft)),
                )
            }),
            View::Unknown => self
                .selected_unknown()
                .map(|e| (format!("entry {}", short_key(e.key())), page::entry_text(e))),
            View::Ledger => self
                .selected_entry()
                .map(|e| (format!("entry {}", short_key(e.key())), page::entry_text(e))),
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
}
