//! The forms a decision is typed into, and the confirmation each turns into. A
//! confirmation carries the effect exactly as it will run: what the person saw (the
//! draft's version, the entry's attempt) and what they typed.

use tui_input::Input;

use super::action::Effect;
use crate::ledger::{Seen, Status, duration};

/// Whether an unknown send's attempt may still be sending, as the screen showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StillSending {
    /// Its attempt has ended, or its claimer's limit has passed.
    No,
    /// Known to: its claimer is seen alive here, or its recorded limit has not passed
    /// (the sentence says which). The ledger refuses to mark it failed unless the
    /// person says they know better, which confirming the form says.
    Known(String),
    /// Its claimer cannot be seen (a Node claim, another host with no limit), and it
    /// was claimed less than `--older-than` ago.
    Perhaps,
}

impl StillSending {
    /// Whether the row is marked as perhaps in flight.
    pub fn may(&self) -> bool {
        *self != StillSending::No
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
        /// Its facts were never checked (no recheck command ran, none were pushed).
        unchecked: bool,
        /// Its earlier approval ran out: who gave it and when it expired.
        expired: Option<String>,
        /// It needs several approvers: how far it got, as shown.
        quorum: Option<QuorumShown>,
        /// The revision was written by a reviewer's edit: "erin's edit of revision 2
        /// by agent" (made visible), so the approver knows whose text they approve.
        edit: Option<String>,
        /// Who and what, as the list showed it (empty when it says nothing).
        who: String,
    },
    Reject {
        id: i64,
        version: i64,
        /// Who and what, as the list showed it.
        who: String,
    },
    /// Several marked drafts, one reason.
    RejectMany {
        /// Each draft's id, version and who and what, as shown.
        drafts: Vec<(i64, i64, String)>,
    },
    MarkSent {
        key: String,
        /// Who and what, as the list showed it.
        who: String,
        /// Whether it may still be sending.
        in_flight: StillSending,
        /// The entry as it was shown: the decision applies only to it.
        seen: Seen,
    },
    MarkFailed {
        key: String,
        /// Who and what, as the list showed it.
        who: String,
        in_flight: StillSending,
        seen: Seen,
        /// Verify found it at the provider: what it said, and what the person must type
        /// in the Evidence field to mark it failed all the same (failed sends it again).
        against: Option<Against>,
    },
    /// Several marked unknown sends settled the same way, one note.
    SettleMany { status: Status, sends: Vec<Settle> },
}

/// A draft's approvals so far, as the approval form showed them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumShown {
    /// Approvals of the current revision so far (this round).
    pub approved: i64,
    /// Distinct approvers it needs.
    pub required: i64,
    /// Who gave them, in order ("dana, sam").
    pub approvers: String,
    /// The vote whose approver's limit comes first: who, and when (ISO 8601 and ms).
    /// The approval the last vote makes expires no later.
    pub earliest: Option<(String, String, i64)>,
    /// When the form was opened (ms since the epoch).
    pub shown_at: i64,
}

/// One send of a bulk settle, as it was shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settle {
    pub key: String,
    /// Who and what, as the list showed it.
    pub who: String,
    pub in_flight: StillSending,
    pub seen: Seen,
}

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
    pub fn new(kind: FormKind, title: String, fields: Vec<Field>) -> Form {
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

    fn optional(&self, label: &str) -> Option<String> {
        Some(self.value(label)).filter(|v| !v.is_empty())
    }
}

/// A verify answer that says a send happened, standing against marking it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Against {
    /// The answer as the note records it: "verify (CMD) at T: it happened, provider id X".
    pub evidence: String,
    /// What the person types to go against it: the provider id, else `happened`.
    pub typed: String,
}

pub fn field(label: &'static str, value: &str, required: bool) -> Field {
    Field {
        label,
        input: Input::new(value.to_owned()),
        required,
    }
}

/// An irreversible step, shown before it is taken.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirm {
    pub title: String,
    pub lines: Vec<String>,
    /// When set, only `y` confirms (Enter does not): the draft needs a second look.
    pub warning: Option<String>,
    /// What changed in the draft since this was shown, said before the warning, and
    /// only `y` confirms then too.
    pub changed: Option<String>,
    pub effect: Effect,
}

impl Confirm {
    /// What it warns of, the change since it was shown first.
    pub fn warnings(&self) -> Option<String> {
        match (&self.changed, &self.warning) {
            (Some(changed), Some(warning)) => Some(format!("{changed} {warning}")),
            (changed, warning) => changed.clone().or_else(|| warning.clone()),
        }
    }

    /// Whether only `y` confirms it.
    pub fn strict(&self) -> bool {
        self.warning.is_some() || self.changed.is_some()
    }

    /// Adds `said` before what it warns of already.
    pub fn warn_first(&mut self, said: String) {
        self.warning = Some(match self.warning.take() {
            Some(other) => format!("{said} {other}"),
            None => said,
        });
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

/// How many of a bulk confirmation's items are listed by name.
const LISTED: usize = 5;

/// Checks a form and turns it into the confirmation of what it will do.
pub fn submit(form: &Form, older_than_ms: i64) -> Result<Confirm, String> {
    if let Some(missing) = form
        .fields
        .iter()
        // An empty Evidence is answered below, with why it is asked for.
        .find(|f| f.required && f.input.value().trim().is_empty() && f.label != "Evidence")
    {
        return Err(format!("{} is needed.", missing.label));
    }
    let by = form.value("Name");
    // Checked here, before the confirmation, so the form is kept to be corrected; the
    // store checks it again whatever the screen did.
    if let Some(why) = crate::review::quorum::name_problem(&by) {
        return Err(format!(
            "Name {} {why}; give one person's name.",
            crate::text::visible_inline(&by)
        ));
    }
    let still_sending = format!(
        "claimed less than {} ago and its attempt has not ended: it may still be sending; check with the provider first.",
        duration::format_duration(older_than_ms as f64)
    );
    match &form.kind {
        FormKind::Approve { .. } => confirm_approve(form, by),
        FormKind::Reject { id, version, who } => Ok(confirm_reject(form, by, *id, *version, who)),
        FormKind::RejectMany { drafts } => Ok(confirm_reject_many(form, by, drafts)),
        FormKind::MarkSent { .. } | FormKind::MarkFailed { .. } => {
            confirm_mark(form, by, &still_sending)
        }
        FormKind::SettleMany { status, sends } => Ok(confirm_settle_many(
            form,
            by,
            *status,
            sends,
            &still_sending,
        )),
    }
}

/// The approval form: its TTL checked, what the approval makes of the quorum, and
/// what the approver should know of the draft's facts.
fn confirm_approve(form: &Form, by: String) -> Result<Confirm, String> {
    let FormKind::Approve {
        id,
        revision,
        version,
        suspicious,
        drifted,
        unchecked,
        expired,
        quorum,
        edit,
        who,
    } = &form.kind
    else {
        return Err("not an approval form".into());
    };
    let ttl = form.value("TTL");
    let ms = duration::parse_duration(&ttl).map_err(|e| format!("TTL: {e}"))?;
    if ms <= 0.0 {
        return Err("TTL must be longer than zero.".into());
    }
    let mut lines = vec![match edit {
        Some(edit) => {
            format!("Approve draft {id}, revision {revision} ({edit}), for {ttl}, as {by}?")
        }
        None => format!("Approve draft {id} (revision {revision}) for {ttl}, as {by}?"),
    }];
    // The number alone does not say who would get it (AG9).
    if !who.is_empty() {
        lines.push(format!("The send: {who}"));
    }
    if let Some(q) = quorum {
        lines.push(quorum_line(q, ms, &ttl));
    }
    if *drifted {
        lines.push(
            "Its facts have changed since it was submitted: dispatch will refuse (stale_facts) until they match again."
                .into(),
        );
    }
    if let Some(expired) = expired {
        lines.push(expired.clone());
    }
    if *unchecked {
        lines.push(
            "Its facts were never checked against the source since it was submitted (c rechecks, when it has a recheck command)."
                .into(),
        );
    }
    Ok(Confirm {
        title: "Approve".into(),
        lines,
        warning: suspicious.then(|| {
            "The payload holds control, escape, bidi or invisible characters (shown as marks). Approve it anyway? Press y."
                .to_owned()
        }),
        changed: None,
        effect: Effect::Approve {
            id: *id,
            revision: *revision,
            version: *version,
            ttl,
            by,
            note: form.optional("Note"),
        },
    })
}

/// What this approval makes of a quorum: how many of how many, and, when it completes
/// it, when the approval runs out (an earlier approver's limit may come first).
fn quorum_line(q: &QuorumShown, ttl_ms: f64, ttl: &str) -> String {
    let makes = q.approved + 1;
    let so_far = if q.approvers.is_empty() {
        String::new()
    } else {
        format!(" (after {})", q.approvers)
    };
    if makes < q.required {
        let more = q.required - makes;
        return format!(
            "Your approval makes {makes} of {}{so_far}: {} more needed before it can be sent.",
            q.required,
            if more == 1 {
                "one".to_owned()
            } else {
                more.to_string()
            }
        );
    }
    match &q.earliest {
        Some((who, at, at_ms)) if (*at_ms as f64) < q.shown_at as f64 + ttl_ms => {
            format!(
                "Your approval makes {makes} of {}{so_far}: the approval is made now, and expires at {at} ({}'s limit, in {}), before your {ttl}.",
                q.required,
                crate::text::visible_inline(who),
                duration::format_duration((*at_ms - q.shown_at).max(0) as f64)
            )
        }
        _ => format!(
            "Your approval makes {makes} of {}{so_far}: the approval is made now, and its {ttl} run from now.",
            q.required
        ),
    }
}

fn confirm_reject(form: &Form, by: String, id: i64, version: i64, who: &str) -> Confirm {
    let reason = form.value("Reason");
    let mut lines = vec![format!("Reject draft {id} as {by}?")];
    if !who.is_empty() {
        lines.push(format!("The send: {who}"));
    }
    lines.push(format!("Reason: {reason}"));
    Confirm {
        title: "Reject".into(),
        lines,
        warning: None,
        changed: None,
        effect: Effect::Reject {
            id,
            version,
            reason,
            by,
        },
    }
}

fn confirm_reject_many(form: &Form, by: String, drafts: &[(i64, i64, String)]) -> Confirm {
    let reason = form.value("Reason");
    // Each by its number and, where the list showed one, who and what (AG9).
    let ids = drafts
        .iter()
        .map(|(id, _, who)| match who.is_empty() {
            true => id.to_string(),
            false => format!("{id} ({who})"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Confirm {
        title: format!("Reject {} drafts", drafts.len()),
        lines: vec![
            format!("Reject {} drafts as {by}: {ids}?", drafts.len()),
            format!("Reason: {reason}"),
            "Each is refused on its own if it changed since it was shown.".into(),
        ],
        warning: None,
        changed: None,
        effect: Effect::Batch(
            drafts
                .iter()
                .map(|(id, version, _)| Effect::Reject {
                    id: *id,
                    version: *version,
                    reason: reason.clone(),
                    by: by.clone(),
                })
                .collect(),
        ),
    }
}

/// Marking one unknown send sent or failed. Against what verify found, failed is
/// refused until the evidence is typed, and the decision's note keeps what verify said.
fn confirm_mark(form: &Form, by: String, still_sending: &str) -> Result<Confirm, String> {
    let (FormKind::MarkSent {
        key,
        who,
        in_flight,
        seen,
    }
    | FormKind::MarkFailed {
        key,
        who,
        in_flight,
        seen,
        ..
    }) = &form.kind
    else {
        return Err("not a form that marks a send".into());
    };
    let sent = matches!(form.kind, FormKind::MarkSent { .. });
    let against = match &form.kind {
        FormKind::MarkFailed {
            against: Some(against),
            ..
        } => Some(against),
        _ => None,
    };
    if let Some(against) = against
        && form.value("Evidence") != against.typed
    {
        // Short enough for the form's one line: the evidence is in the title
        // and the detail pane.
        return Err(format!(
            "Verify found it: marked failed, it would be sent again. To go against that, type {} in Evidence.",
            against.typed
        ));
    }
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
    // The key alone does not say who would get it, or get it again.
    if !who.is_empty() {
        lines.push(format!("The send: {who}"));
    }
    let provider_id = if sent {
        form.optional("Provider id")
    } else {
        None
    };
    if let Some(id) = &provider_id {
        lines.push(format!("Provider id: {id}"));
    }
    if let Some(note) = form.optional("Note") {
        lines.push(format!("Note: {note}"));
    }
    if let Some(against) = against {
        lines.push(format!(
            "Against verify's answer: {}. The next run sends it again.",
            against.evidence
        ));
    }
    let mut warning = None;
    match in_flight {
        StillSending::No => {}
        StillSending::Perhaps => lines.push(format!("It was {still_sending}")),
        StillSending::Known(why) => {
            lines.push(format!("{}.", capitalised(why)));
            // Marked failed, the next attempt could send it while this one still runs.
            if !sent {
                warning = Some(
                    "Marked failed while it may still be sending, the next attempt can send it a second time: check with the provider first."
                        .to_owned(),
                );
            }
        }
    }
    Ok(Confirm {
        title: if sent { "Mark sent" } else { "Mark failed" }.into(),
        lines,
        warning,
        changed: None,
        effect: Effect::Resolve {
            key: key.clone(),
            status: if sent { Status::Sent } else { Status::Failed },
            by,
            note: match (form.optional("Note"), against) {
                (note, Some(against)) => Some(format!(
                    "{}marked failed against verify's answer: {}",
                    note.map(|n| format!("{n}; ")).unwrap_or_default(),
                    against.evidence
                )),
                (note, None) => note,
            },
            provider_id,
            seen: seen.clone(),
            // The person confirmed it, having read that it may still be sending.
            even_if_running: matches!(in_flight, StillSending::Known(_)),
            even_if_found: against.is_some(),
        },
    })
}

/// `text` with its first letter in capitals.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Settling the marked unknown sends one way, with one note; each is refused on its
/// own if it changed since it was shown.
fn confirm_settle_many(
    form: &Form,
    by: String,
    status: Status,
    sends: &[Settle],
    still_sending: &str,
) -> Confirm {
    let word = status.as_str();
    let then = if status == Status::Sent {
        "They will not be sent again."
    } else {
        "The next attempt for each key will send it."
    };
    let mut lines = vec![format!(
        "Mark {} unknown sends {word} as {by}? {then}",
        sends.len()
    )];
    for send in sends.iter().take(LISTED) {
        let short = short_key(&send.key);
        // Which of them the warning below is about (AJ8: it said how many only).
        let mark = match send.in_flight {
            StillSending::Known(_) => "  ! may still be sending",
            StillSending::Perhaps => "  ? may still be sending",
            _ => "",
        };
        if send.who == short {
            lines.push(format!("  {short}{mark}"));
        } else {
            lines.push(format!("  {} ({short}){mark}", send.who));
        }
    }
    if sends.len() > LISTED {
        lines.push(format!("  … and {} more", sends.len() - LISTED));
    }
    if let Some(note) = form.optional("Note") {
        lines.push(format!("Note: {note}"));
    }
    let perhaps = sends
        .iter()
        .filter(|s| s.in_flight == StillSending::Perhaps)
        .count();
    if perhaps > 0 {
        lines.push(format!("{perhaps} of them were {still_sending}"));
    }
    let known = sends
        .iter()
        .filter(|s| matches!(s.in_flight, StillSending::Known(_)))
        .count();
    let warning = (known > 0 && status == Status::Failed).then(|| {
        format!(
            "{known} of them (marked !) may still be sending (their claimer runs, or its time limit has not passed): marked failed, the next attempt can send each a second time."
        )
    });
    lines.push("Each is refused on its own if it changed since it was shown.".into());
    Confirm {
        title: format!("Settle {} sends as {word}", sends.len()),
        lines,
        warning,
        changed: None,
        effect: Effect::Batch(
            sends
                .iter()
                .map(|send| Effect::Resolve {
                    key: send.key.clone(),
                    status,
                    by: by.clone(),
                    note: form.optional("Note"),
                    provider_id: None,
                    seen: send.seen.clone(),
                    even_if_running: matches!(send.in_flight, StillSending::Known(_)),
                    // A bulk settle leaves out what verify found.
                    even_if_found: false,
                })
                .collect(),
        ),
    }
}
