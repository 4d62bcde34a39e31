//! The forms a decision starts from (approve, reject, mark sent or failed, one row or the
//! marked ones), each restating who and what it is about, and the marks that choose the
//! rows.

use super::{App, Overlay, entry_who};
use crate::ledger::decision::Decision;
use crate::ledger::{Entry, Seen, Status, time};
use crate::review::Draft;
use crate::review::drift::DriftStatus;
use crate::ui::forms::field;
use crate::ui::forms::{Form, FormKind, Settle, short_key};
use crate::ui::keymap::View;

/// Who must still approve a draft another approval by this person would not count
/// toward: "a second person" while one more is needed, else how many.
pub(super) fn others_must_approve(missing: i64) -> String {
    if missing > 1 {
        format!("{missing} more people must approve it")
    } else {
        "one more person must approve it".to_owned()
    }
}

/// Why a bulk decision opened nothing: no marked row is shown.
pub(super) fn hidden_marks(hidden: usize) -> String {
    if hidden == 0 {
        return "No marked row is listed any more (each was decided or changed since): Esc clears the marks.".to_owned();
    }
    format!(
        "The {hidden} marked row(s) are hidden by the filter, and a decision applies to what is shown: clear the filter to see them, or Esc to clear the marks."
    )
}

/// Said in a bulk form's title when marked rows are hidden by the filter.
pub(super) fn left_hidden(hidden: usize) -> String {
    match hidden {
        0 => String::new(),
        n => format!(" ({n} marked but hidden by the filter are left)"),
    }
}

impl App {
    /// Marks of what no longer is listed (settled, decided, gone) are dropped.
    pub(super) fn prune_marks(&mut self) {
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

    /// The id (a draft's) or key (an entry's) of the selected row, for marks.
    pub(super) fn selected_mark_id(&self) -> Option<String> {
        match self.view {
            View::Approvals => self.selected_draft().map(|d| d.id.to_string()),
            View::Unknown => self.selected_unknown().map(|e| e.key().to_owned()),
            _ => None,
        }
    }

    pub(super) fn toggle_mark(&mut self) {
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

    pub(super) fn mark_all(&mut self) {
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

    pub(super) fn open_approve(&mut self) {
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
        let quorum = self.quorum_shown(draft);
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
            who: draft_who(draft),
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

    /// How far `draft`'s approval has got, for an approve form: None when it needs
    /// one approver.
    pub(super) fn quorum_shown(&self, draft: &Draft) -> Option<crate::ui::forms::QuorumShown> {
        let tally = draft.tally(self.now);
        draft.needs_quorum().then(|| crate::ui::forms::QuorumShown {
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
        })
    }

    /// "erin's edit of revision 2 by agent", when the draft's current revision was
    /// written by an edit, as the decision log has it (what is loaded of it).
    pub(super) fn written_by_edit(&self, draft: &Draft) -> Option<String> {
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

    pub(super) fn open_reject(&mut self) {
        let marked = &self.state(View::Approvals).marked;
        if !marked.is_empty() {
            // Only the marked drafts the filter shows: a decision applies to what the
            // person sees, and rows marked before the filter changed are not on screen.
            let drafts: Vec<(i64, i64, String)> = self
                .visible_drafts()
                .iter()
                .filter(|d| marked.contains(&d.id.to_string()))
                .map(|d| (d.id, d.version, draft_who(d)))
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
            let who = draft_who(draft);
            self.overlay = Some(Overlay::Form(Form::new(
                FormKind::Reject { id, version, who },
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
                    in_flight: self.still_sending(e),
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
    pub(super) fn open_sent_from_ledger(&mut self) {
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
    pub(super) fn open_settle_on(&mut self, entry: &Entry, status: Status) {
        let sent = status == Status::Sent;
        let key = entry.key().to_owned();
        let who = crate::text::who_and_what(entry.meta())
            .map(|w| crate::text::visible_inline(&w).into_owned())
            .unwrap_or_default();
        let in_flight = self.still_sending(entry);
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
}

/// Who and what draft `draft` is for, made visible, as its row shows it; empty when
/// its meta says nothing.
fn draft_who(draft: &Draft) -> String {
    draft
        .recipient_and_intent()
        .map(|who| crate::text::visible_inline(&who).into_owned())
        .unwrap_or_default()
}
