//! A confirmation open while what it is about changes: another person's vote, a new
//! revision, a withdrawal, a send that finished or was settled. The confirmation is a
//! picture of the item as it was when it opened; once the loaded lists say otherwise,
//! it says what the item is now, and only `y` confirms (the decision itself is still
//! refused by the store if it no longer applies). Checked when a list loads and when a
//! form turns into its confirmation, since a change may have loaded while the form
//! was open (operator's shift, session 44: AK1, a first vote that made the approval).

use super::{App, Loaded, Overlay};
use crate::ledger::{Seen, Status};
use crate::review::drift::DriftStatus;
use crate::ui::action::Effect;
use crate::ui::forms::short_key;

impl App {
    /// Sets the open confirmation's `changed` from what is loaded now, if anything it
    /// is about is no longer as it was shown.
    pub(super) fn confirm_open_changed(&mut self) {
        let Some(Overlay::Confirm(confirm)) = &self.overlay else {
            return;
        };
        let said = match &confirm.effect {
            Effect::Batch(effects) => {
                let changed: Vec<String> = effects
                    .iter()
                    .filter_map(|effect| self.changed_since_shown(effect))
                    .collect();
                match changed.as_slice() {
                    [] => None,
                    [one] => Some(format!(
                        "1 of the {} changed while this was open: {one}",
                        effects.len()
                    )),
                    [first, ..] => Some(format!(
                        "{} of the {} changed while this was open, among them: {first}",
                        changed.len(),
                        effects.len()
                    )),
                }
            }
            effect => self
                .changed_since_shown(effect)
                .map(|now| format!("Changed while this was open: {now}")),
        };
        let Some(said) = said else {
            return;
        };
        if let Some(Overlay::Confirm(confirm)) = &mut self.overlay {
            confirm.changed = Some(format!("{said}. Esc, and look again before you decide."));
        }
    }

    /// What the item of `effect` is now, when that is not what was shown.
    fn changed_since_shown(&self, effect: &Effect) -> Option<String> {
        match effect {
            Effect::Approve { id, version, .. } | Effect::Reject { id, version, .. } => {
                self.draft_changed(*id, *version)
            }
            Effect::Resolve { key, seen, .. } => self.entry_changed(key, seen),
            _ => None,
        }
    }

    fn draft_changed(&self, id: i64, version: i64) -> Option<String> {
        let Loaded::Ready(drafts) = &self.approvals else {
            return None;
        };
        let Some(draft) = drafts.iter().find(|d| d.id == id) else {
            return Some(format!(
                "draft {id} has left the queue (someone rejected, withdrew or dispatched it; view 4 says who)"
            ));
        };
        (draft.version != version).then(|| {
            // "approved by carol" for an approval made, "approved 1 of 2" toward one.
            let label = draft.state_label(self.now);
            let by = match &draft.decided_by {
                Some(by) if label == draft.state.as_str() => {
                    format!(" by {}", crate::text::visible_inline(by))
                }
                _ => String::new(),
            };
            format!(
                "draft {id} is now revision {}, {label}{by}{}",
                draft.revision,
                if draft.drift().status == DriftStatus::Drifted {
                    ", its facts changed"
                } else {
                    ""
                },
            )
        })
    }

    fn entry_changed(&self, key: &str, seen: &Seen) -> Option<String> {
        let short = short_key(key);
        let current = self.loaded_entries().find(|e| e.key() == key);
        match current {
            Some(entry) if seen.matches(entry) => None,
            Some(entry) => Some(format!(
                "{short} is now {}, attempt {}",
                entry.status().as_str(),
                entry.attempts()
            )),
            // Pending when shown, and no longer among the unknown sends: finished by its
            // own send, or settled by someone, on a ledger page not loaded here.
            None if seen.status == Status::Pending && self.unknown.ready().is_some() => {
                Some(format!(
                    "{short} is no longer an unknown send: its send finished, or someone settled it"
                ))
            }
            None => None,
        }
    }
}
