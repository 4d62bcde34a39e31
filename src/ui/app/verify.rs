//! `v` from the screen's side: which unknown sends are asked about, in order, each
//! answer kept for its key until the entry changes, and the settlement it prefills.
//! The answers' own types are in `ui::verify`.

use std::collections::HashMap;

use crate::ledger::{Entry, Seen, Status};
use crate::provider::CheckAnswer;
use crate::text::visible_inline;

use crate::ui::action::Effect;
use crate::ui::keymap::View;
use crate::ui::verify::{
    Prefill, RowMark, SentFix, Verified, answer_words, at_text, channel_of, evidence_line,
};

use super::{App, entry_who};

impl App {
    /// What `v` shows on the row of `key`, if anything.
    pub fn verify_mark(&self, key: &str) -> Option<RowMark> {
        if self.verifying.running.as_deref() == Some(key) {
            return Some(RowMark::Running);
        }
        if self.verifying.queue.iter().any(|k| k == key) {
            return Some(RowMark::Queued);
        }
        self.verifying.answers.get(key).map(|v| match v.answer {
            CheckAnswer::Happened { .. } => RowMark::Happened,
            CheckAnswer::NotThere => RowMark::NotThere,
            CheckAnswer::Inconclusive { .. } => RowMark::Inconclusive,
        })
    }

    /// The detail pane's lines about `v` for `key` (plain text, made safe here), with
    /// whether they warn.
    pub fn verify_detail(&self, key: &str) -> Vec<(String, bool)> {
        match self.verify_mark(key) {
            Some(RowMark::Running) => {
                return vec![(
                    format!(
                        "Verifying… (the command has up to {} to answer)",
                        self.verify.timeout.written
                    ),
                    false,
                )];
            }
            Some(RowMark::Queued) => {
                return vec![(
                    "Verify queued: it is asked after the ones before it.".into(),
                    false,
                )];
            }
            _ => {}
        }
        let Some(v) = self.verifying.answers.get(key) else {
            return Vec::new();
        };
        let mut lines = vec![(
            format!(
                "Verify ({}, at {}): {}",
                visible_inline(&v.command),
                at_text(v.at),
                answer_words(&v.answer)
            ),
            matches!(v.answer, CheckAnswer::Inconclusive { .. }),
        )];
        match &v.answer {
            CheckAnswer::Happened { evidence, .. } => {
                lines.push((format!("evidence: {}", evidence_line(evidence)), false));
                lines.push((
                    "Enter opens the sent form with this as its note; nothing is written until you confirm."
                        .into(),
                    false,
                ));
            }
            CheckAnswer::NotThere => lines.push((
                "A provider's record can lag, so it stays unknown. f opens the failed form, noting what verify said."
                    .into(),
                false,
            )),
            CheckAnswer::Inconclusive { .. } => {
                lines.push(("v asks again; s or f settles it by hand.".into(), false));
            }
        }
        lines
    }

    /// `v`: asks about the marked unknown sends, else the selected one.
    pub(super) fn verify_selected(&mut self) -> Vec<Effect> {
        let marked = &self.state(View::Unknown).marked;
        let targets: Vec<String> = if marked.is_empty() {
            match self.selected_unknown() {
                Some(entry) => vec![entry.key().to_owned()],
                None => {
                    self.say("No unknown send selected.", false);
                    return Vec::new();
                }
            }
        } else {
            self.unknown
                .ready()
                .map(|all| {
                    all.iter()
                        .filter(|e| marked.contains(e.key()))
                        .map(|e| e.key().to_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut added = 0;
        let mut busy = 0;
        let mut missing: Vec<String> = Vec::new();
        for key in targets {
            if self.verifying.running.as_deref() == Some(key.as_str())
                || self.verifying.queue.contains(&key)
            {
                busy += 1;
                continue;
            }
            let Some(entry) = self.listed(&key) else {
                continue;
            };
            if let Err(why) = self.verify.command_for(channel_of(entry)) {
                missing.push(why);
                continue;
            }
            self.verifying.answers.remove(&key);
            self.verifying.queue.push_back(key);
            added += 1;
        }
        let effects = self.next_verify();
        let mut text = match (added, self.verifying.running.as_deref()) {
            (0, _) => String::new(),
            (_, Some(running)) => {
                let entry = self.listed(running);
                let who = entry
                    .map(|e| visible_inline(&entry_who(e)).into_owned())
                    .unwrap_or_default();
                // Which command answers, and where it was configured.
                let with = entry
                    .and_then(|e| self.verify.command_for(channel_of(e)).ok())
                    .map(|c| format!(" with {}", visible_inline(&c.from)))
                    .unwrap_or_default();
                let waiting = self.verifying.queue.len();
                if waiting > 0 {
                    format!("Verifying {who}{with}… ({waiting} more waiting their turn.)")
                } else {
                    format!("Verifying {who}{with}…")
                }
            }
            (_, None) => String::new(),
        };
        if busy > 0 {
            text.push_str(&format!(" {busy} already being verified."));
        }
        if let Some(first) = missing.first() {
            if missing.len() > 1 {
                text.push_str(&format!(" {} have no verify command. ", missing.len()));
            } else {
                text.push(' ');
            }
            text.push_str(first);
            text.push('.');
        }
        if text.trim().is_empty() {
            text = "Nothing to verify: the marked sends are no longer listed.".to_owned();
        }
        self.say(text.trim(), missing.is_empty());
        effects
    }

    /// The next waiting key's effect, when nothing runs.
    pub(super) fn next_verify(&mut self) -> Vec<Effect> {
        if self.verifying.running.is_some() {
            return Vec::new();
        }
        while let Some(key) = self.verifying.queue.pop_front() {
            // Settled or gone since it was queued: nothing to ask.
            let Some(entry) = self.listed(&key).cloned() else {
                continue;
            };
            let Ok(command) = self.verify.command_for(channel_of(&entry)) else {
                continue;
            };
            let (argv, text) = (command.argv.clone(), command.text.clone());
            self.verifying.running = Some(key.clone());
            return vec![Effect::Verify {
                key,
                entry: Box::new(entry),
                argv,
                timeout: self.verify.timeout.clone(),
                by: self.by.clone(),
                command: text,
            }];
        }
        Vec::new()
    }

    /// The verify command answered about `key`, as it was (`seen`).
    pub(super) fn verify_answered(
        &mut self,
        key: String,
        seen: Seen,
        answer: CheckAnswer,
    ) -> Vec<Effect> {
        if self.verifying.running.as_deref() == Some(key.as_str()) {
            self.verifying.running = None;
        }
        let entry = self.listed(&key);
        let who = entry
            .map(|e| visible_inline(&entry_who(e)).into_owned())
            .unwrap_or_else(|| crate::ui::forms::short_key(&key));
        // An answer about an attempt no longer listed (settled, retried meanwhile) is
        // about something that is not shown: said, not kept.
        let current = entry.is_some_and(|e| Seen::entry(e) == seen);
        let command = entry
            .and_then(|e| self.verify.command_for(channel_of(e)).ok())
            .map(|c| c.text.clone())
            .unwrap_or_default();
        let words = answer_words(&answer);
        let (next, ok) = match &answer {
            CheckAnswer::Happened { .. } => (
                "Select it and press Enter to open the sent form, prefilled.",
                true,
            ),
            CheckAnswer::NotThere => (
                "It stays unknown (a record can lag); f opens the failed form.",
                true,
            ),
            CheckAnswer::Inconclusive { .. } => ("v asks again.", false),
        };
        let mut text = if current {
            self.verifying.answers.insert(
                key.clone(),
                Verified {
                    seen,
                    answer,
                    at: self.now,
                    command,
                    from_log: false,
                },
            );
            format!("Verify {who}: {words}. {next}")
        } else if matches!(answer, CheckAnswer::Happened { .. }) {
            // The provider has it, and someone settled it meanwhile: if that was
            // "failed", the next run sends it again. A person must see this.
            let text = format!(
                "Verify {who}: {words}, but it was changed or settled by someone while it was asked. If it is now failed, the next run sends it again though the provider has it; to record what the provider has: in the Ledger view (3), select it (its detail says who settled it) and press s; or in a shell: {}",
                self.resolve_sent_command(&key, &answer)
            );
            let effects = self.next_verify();
            self.say_until_next(&text);
            return effects;
        } else {
            format!(
                "Verify {who}: {words}, but it changed or was settled while it was asked; the answer is not kept."
            )
        };
        let effects = self.next_verify();
        if !self.verifying.queue.is_empty() || self.verifying.running.is_some() {
            let left = self.verifying.queue.len() + usize::from(self.verifying.running.is_some());
            text.push_str(&format!(" ({left} still to verify.)"));
        }
        self.say(&text, ok && current);
        effects
    }

    /// A verify someone asked found `key`'s attempt `seen`, as the decision log says:
    /// kept as this screen's own answer, so the row reads `[happened]`, Enter opens the
    /// sent form with its provider id and evidence, and `f` asks for the evidence.
    pub(super) fn learn_found(&mut self, key: &str, seen: &Seen, found: &crate::ledger::Found) {
        self.verifying.answers.insert(
            key.to_owned(),
            Verified {
                seen: seen.clone(),
                answer: CheckAnswer::Happened {
                    provider_id: found.provider_id.clone(),
                    id_problem: None,
                    evidence: found.evidence.clone(),
                },
                at: crate::ledger::time::parse_date(&found.at).unwrap_or(self.now),
                command: format!(
                    "the verify {} asked, as the decision log keeps it",
                    found.by
                ),
                from_log: true,
            },
        );
    }

    /// The history of `subject` arrived: when it is a listed unknown send that a
    /// verify in it found, and this screen has no answer of its own, that one is kept.
    pub(super) fn learn_from_history(
        &mut self,
        subject: &str,
        decisions: &[crate::ledger::Decision],
    ) {
        if self.verifying.answers.contains_key(subject) {
            return;
        }
        let Some(entry) = self.listed(subject).cloned() else {
            return;
        };
        if let Some(found) = crate::ledger::Found::among(decisions, &entry)
            .or_else(|| crate::ledger::Found::on_entry(&entry))
        {
            self.learn_found(subject, &Seen::entry(&entry), &found);
        }
    }

    /// The answer about `key` was not kept in the decision log: said until the next
    /// message, since a person relying on it being kept must know.
    pub(super) fn verify_not_kept(&mut self, key: &str, why: &str) {
        let who = self
            .listed(key)
            .map(|e| visible_inline(&entry_who(e)).into_owned())
            .unwrap_or_else(|| crate::ui::forms::short_key(key));
        self.say_until_next(&format!(
            "Verify {who}: its answer is on this screen only; it could not be kept in the decision log: {}",
            visible_inline(why)
        ));
    }

    /// Enter in the Unknown view: settle the selected send as its verify answer says,
    /// through the form (which the person still submits and confirms).
    pub(super) fn settle_verified(&mut self) {
        let Some(entry) = self.selected_unknown() else {
            self.say("No unknown send selected.", false);
            return;
        };
        let key = entry.key().to_owned();
        match self.verifying.answers.get(&key).map(|v| &v.answer) {
            // The row the answer is about, even when others are marked: a bulk
            // settle carries no provider id or evidence.
            Some(CheckAnswer::Happened { .. }) => self.open_settle_one(Status::Sent),
            Some(CheckAnswer::NotThere) => self.say(
                "Verify found no record of it. That alone does not make it failed (a provider's record can lag): f opens the failed form if you know it did not go out.",
                true,
            ),
            Some(CheckAnswer::Inconclusive { why }) => {
                let why = visible_inline(why).into_owned();
                self.say(
                    &format!("Verify could not say ({why}): v asks again, s or f settles it by hand."),
                    false,
                );
            }
            None if self.verifying.running.as_deref() == Some(key.as_str()) => {
                self.say("Still verifying it; its answer shows here when it comes.", true);
            }
            None => self.say(
                "Not verified yet: v asks the verify command about it; s or f settles it by hand.",
                false,
            ),
        }
    }

    /// Verify's answer that `key`'s send happened (for the attempt shown), as what must
    /// be typed to mark it failed all the same: its provider id, else `happened`.
    pub(super) fn verified_happened(&self, key: &str) -> Option<crate::ui::forms::Against> {
        let v = self.verifying.answers.get(key)?;
        let CheckAnswer::Happened { provider_id, .. } = &v.answer else {
            return None;
        };
        let typed = provider_id.as_deref().map_or_else(
            || "happened".to_owned(),
            |id| visible_inline(id).into_owned(),
        );
        Some(crate::ui::forms::Against {
            evidence: format!(
                "verify ({}) at {}: {}",
                visible_inline(&v.command),
                at_text(v.at),
                answer_words(&v.answer)
            ),
            typed,
        })
    }

    /// What the settle form for `key` starts with, when its verify answer says
    /// something for `status`: "happened" for sent, "not there" for failed.
    pub(super) fn verify_prefill(&self, key: &str, status: Status) -> Option<Prefill> {
        let v = self.verifying.answers.get(key)?;
        let command = visible_inline(&v.command).into_owned();
        let at = at_text(v.at);
        match (&v.answer, status) {
            (
                CheckAnswer::Happened {
                    provider_id,
                    id_problem,
                    evidence,
                },
                Status::Sent,
            ) => {
                let mut note = format!("verify ({command}) at {at}: it happened");
                if let Some(problem) = id_problem {
                    note.push_str(&format!(", {}", visible_inline(problem)));
                }
                note.push_str(&format!("; evidence {}", evidence_line(evidence)));
                Some(Prefill {
                    note,
                    provider_id: provider_id.clone(),
                    seen: v.seen.clone(),
                })
            }
            (CheckAnswer::NotThere, Status::Failed) => Some(Prefill {
                note: format!(
                    "verify ({command}) at {at} said not there: the provider has no record of it"
                ),
                provider_id: None,
                seen: v.seen.clone(),
            }),
            _ => None,
        }
    }

    /// Answers about entries that changed or left the list are dropped: each was about
    /// an attempt that is no longer the one shown.
    pub(super) fn prune_verified(&mut self) {
        let Some(entries) = self.unknown.ready() else {
            return;
        };
        // Every load of the Unknown view comes here; with nothing verified there is
        // nothing to keep or drop, and a map of every unknown send is not made.
        if self.verifying.answers.is_empty() {
            return;
        }
        let current: HashMap<&str, Seen> =
            entries.iter().map(|e| (e.key(), Seen::entry(e))).collect();
        let mut found_then_settled = Vec::new();
        self.verifying.answers.retain(|key, v| {
            let kept = current.get(key.as_str()) == Some(&v.seen);
            if !kept
                && !v.from_log
                && !current.contains_key(key.as_str())
                && matches!(v.answer, CheckAnswer::Happened { .. })
            {
                found_then_settled.push((key.clone(), v.clone()));
            }
            kept
        });
        // It left the list after verify found it: settled by someone else. Sent is
        // fine; failed would send it again, so say it while there is time to look, and
        // have it ready in the Ledger view.
        if let Some((key, verified)) = found_then_settled.first() {
            let text = format!(
                "{} left the Unknown view, settled by someone, after verify found it. If it was marked failed, the next run sends it again: press 3 (it is shown there, with who settled it) and s records it sent, filled in with verify's answer. In a shell: {}",
                crate::ui::forms::short_key(key),
                self.resolve_sent_command(key, &verified.answer)
            );
            self.ready_sent_fix(key, verified);
            // A refusal about this send already said what happened and who did it.
            let short = crate::ui::forms::short_key(key);
            let said = self
                .status
                .as_ref()
                .is_some_and(|s| !s.ok && s.text.contains(&short));
            if !said {
                self.say_until_next(&text);
            }
        }
    }

    /// Shows `key` alone in the Ledger view, and keeps verify's answer for its sent
    /// form there, so the fix for a found send someone marked failed is two keys away.
    pub(super) fn ready_sent_fix(&mut self, key: &str, verified: &Verified) {
        let prefill = match &verified.answer {
            CheckAnswer::Happened {
                provider_id,
                evidence,
                ..
            } => SentFix {
                key: key.to_owned(),
                provider_id: provider_id.clone(),
                note: format!(
                    "verify ({}) at {}: it happened; evidence {}",
                    visible_inline(&verified.command),
                    at_text(verified.at),
                    evidence_line(evidence)
                ),
            },
            _ => return,
        };
        self.verifying.sent_fix = Some(prefill);
        let ledger = self.state_mut(crate::ui::keymap::View::Ledger);
        ledger.filter = key.to_owned();
        ledger.selected = 0;
        self.ledger_offset = 0;
    }

    /// The command that records `key` as sent with what verify found, pinned to an
    /// entry someone marked failed: the Ledger view shows such an entry and does not
    /// settle it, so the fix is a line to paste (K2).
    pub(super) fn resolve_sent_command(&self, key: &str, answer: &CheckAnswer) -> String {
        let quote = |text: &str| visible_inline(&shell_words::quote(text)).into_owned();
        let id = match answer {
            CheckAnswer::Happened {
                provider_id: Some(id),
                ..
            } => format!(" --provider-id {}", quote(id)),
            _ => String::new(),
        };
        format!(
            "send-once resolve {} {} sent --expect failed{id} --note 'verify found it at the provider'",
            quote(&self.ledger_label),
            quote(key)
        )
    }

    /// The entry the Unknown view lists under `key`, filtered out or not.
    pub(super) fn listed(&self, key: &str) -> Option<&Entry> {
        self.unknown.ready()?.iter().find(|e| e.key() == key)
    }
}
