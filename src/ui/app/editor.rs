//! The draft editor from the screen's side: $EDITOR opened on a revision, the edit it
//! gives back checked and submitted, and an edit kept when it could not be.

use super::{App, KeptEdit, START_AFRESH, WORKING};
use crate::ui::action::{Effect, Outcome};

impl App {
    /// `e` on the selected draft: its payload as the screen shows it (see
    /// [`crate::ui::editor::editable`]), or the edit kept from a try that was not saved.
    /// `E` (`fresh`) drops that kept edit and starts from the payload again.
    pub(super) fn open_editor(&mut self, fresh: bool) -> Vec<Effect> {
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
        let text = crate::ui::editor::editable(&current.payload);
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
    pub(super) fn editor_closed(
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
            let now = self.loaded_draft(id).map_or(revision, |d| d.revision);
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
        let Some(key) = self.loaded_draft(id).map(|d| d.key.clone()) else {
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
    pub(super) fn dropped_note(&mut self, id: i64) -> &'static str {
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
    pub(super) fn after_edit(&mut self, outcome: &Outcome) {
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
    pub(super) fn forget_settled(&mut self, outcome: &Outcome) {
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
}
