//! `approve`, `reject`, `approval` and `approvals`: a person's vote on the revision they
//! name, the approval JSON the Node library reads, and the queue as a list.

use super::show::{clip, what};
use super::{ApprovalArgs, ApprovalsArgs, ApproveArgs, RejectArgs};
use crate::cli::ledger_arg::{by_or_default, check_by, clock, duration_flag, ledger_or_default};
use crate::cli::out_file;
use crate::cli::output::print_json_array;
use crate::cli::queue_arg::with_review;
use crate::cli::{Exit, fail, note, print_json, print_stdout};
use send_once::approval::Ttl;
use send_once::ledger::Access;
use send_once::ledger::{LedgerLocation, duration, jsjson};
use send_once::review::drift::DriftStatus;
use send_once::review::quorum::Tally;
use send_once::review::{Draft, DraftState, Verdict};
use send_once::text::visible_inline;
use serde_json::{Map, Value};

pub(super) fn decide_and_report(
    ledger: &LedgerLocation,
    id: i64,
    verdict: Verdict,
    by: Option<String>,
    note_text: Option<String>,
    json: bool,
) -> Exit {
    if let Err(message) = check_by(by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    let by = by_or_default(by.as_deref());
    let closing = matches!(verdict, Verdict::Reject { .. } | Verdict::Withdraw);
    let (draft, entry) = match with_review(ledger, Access::ReadWrite, async |review| {
        let draft = review.decide(id, verdict, by, note_text).await?;
        // Read after the decision is written: a dispatch that claimed the key before
        // it is seen here, and one that claims it after sees the draft closed (N3).
        let entry = if closing {
            review.ledger_entry(&draft.key).await?
        } else {
            None
        };
        Ok((draft, entry))
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    if json {
        print_json(&draft.to_json(clock()()));
    } else {
        print_stdout(&format!(
            "Draft {} {} by {}.\n",
            draft.id,
            draft.state.as_str(),
            visible_inline(draft.decided_by.as_deref().unwrap_or("?"))
        ));
    }
    match entry {
        Some(entry) if entry.status() != send_once::ledger::Status::Failed => {
            let said = if entry.status() == send_once::ledger::Status::Sent {
                "is recorded as sent"
            } else {
                "is claimed and may be sending now"
            };
            fail(
                Exit::Failed,
                format!(
                    "but its key {} {said} (attempt {}, claimed at {}): a dispatch began before the {}, so it may have gone out; `send-once show` tells how it ended",
                    visible_inline(&draft.key),
                    entry.attempts(),
                    visible_inline(entry.claimed_at()),
                    if draft.state == send_once::review::DraftState::Withdrawn {
                        "withdrawal"
                    } else {
                        "rejection"
                    }
                ),
            )
        }
        _ => Exit::Ok,
    }
}

pub fn reject(args: &RejectArgs) -> Exit {
    if args.reason.trim().is_empty() {
        return fail(Exit::Refused, "--reason must say why");
    }
    decide_and_report(
        &args.draft.ledger,
        args.draft.id,
        Verdict::Reject {
            reason: args.reason.clone(),
        },
        args.by.clone(),
        Some(args.reason.clone()),
        args.json,
    )
}

pub fn approve(args: &ApproveArgs) -> Exit {
    let (ttl, out_file) = match approve_flags(args) {
        Ok(flags) => flags,
        Err(exit) => return exit,
    };
    let draft = match cast_approval(args, ttl) {
        Ok(draft) => draft,
        Err(exit) => return exit,
    };
    if draft.suspicious() {
        note(format!(
            "draft {} holds control, escape, bidi or invisible characters; check it with send-once draft show",
            draft.id
        ));
    }
    let now = clock()();
    if draft.needs_quorum() && !report_votes(args, &draft, now) {
        return Exit::Ok;
    }
    warn_if_drifted(&draft);
    // A held call is made by the proxy alone: `dispatch` of it is refused.
    if send_once::mcp::held::held_by_proxy(&draft).is_some() {
        note(format!(
            "draft {} is a tool call held by send-once mcp proxy: the proxy makes it when the agent calls it again or asks its status tool (send-once dispatch refuses it)",
            draft.id
        ));
    }
    hand_out_approval(args, &draft, out_file)
}

/// The approval's time to live and the --out file made ready, or the refusal.
/// A bad ttl, name or --out is refused before anything is read or written.
fn approve_flags(args: &ApproveArgs) -> Result<(Ttl, Option<out_file::PendingFile>), Exit> {
    if let Err(message) = duration_flag("--ttl", &args.ttl).and(check_by(args.by.as_deref())) {
        return Err(fail(Exit::Refused, message));
    }
    let ttl = Ttl::Text(args.ttl.clone());
    if let Err(e) = ttl.millis() {
        return Err(fail(Exit::Refused, e));
    }
    let out_file = args
        .out
        .as_deref()
        .map(|out| out_file::prepare("--out", out))
        .transpose()
        .map_err(|message| fail(Exit::Refused, message))?;
    Ok((ttl, out_file))
}

/// Records the approval of the revision the person read, and gives back the draft.
fn cast_approval(args: &ApproveArgs, ttl: Ttl) -> Result<Draft, Exit> {
    let by = by_or_default(args.by.as_deref());
    // A person approves what they saw: the revision is pinned, named by --revision once
    // the draft has several (an agent's resubmission can replace the payload between
    // a reviewer's read and this command), else the one there is, so a revision added
    // meanwhile is refused rather than approved unseen (H10).
    // Err(revisions) when none is named and the draft has several.
    let decided = with_review(&args.draft.ledger, Access::ReadWrite, async |review| {
        let revision = match args.revision {
            Some(named) => named,
            None => match review.draft(args.draft.id).await?.revision {
                several if several > 1 => return Ok(Err(several)),
                one => one,
            },
        };
        let verdict = Verdict::Approve {
            ttl,
            revision: Some(revision),
        };
        review
            .decide(args.draft.id, verdict, by, args.note.clone())
            .await
            .map(Ok)
    });
    match decided {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(revisions)) => Err(fail(
            Exit::Refused,
            format!(
                "draft {} has {revisions} revisions: name the one you read with --revision (the current one is {revisions}; send-once draft show {} prints it)",
                args.draft.id, args.draft.id
            ),
        )),
        Err(exit) => Err(exit),
    }
}

/// Says how the votes of a draft that needs several stand; true once they are enough
/// for an approval.
fn report_votes(args: &ApproveArgs, draft: &Draft, now: i64) -> bool {
    let tally = draft.tally(now);
    let names: Vec<String> = tally
        .names()
        .iter()
        .map(|n| visible_inline(n).into_owned())
        .collect();
    if !tally.complete {
        report_vote_short(args, draft, &tally, &names, now);
        return false;
    }
    note(format!(
        "draft {}: approved {} of {} by {}",
        draft.id,
        tally.votes.len(),
        tally.required,
        names.join(", ")
    ));
    true
}

/// A vote short of the number: recorded, and no approval exists yet, so none is
/// printed or written.
fn report_vote_short(args: &ApproveArgs, draft: &Draft, tally: &Tally, names: &[String], now: i64) {
    if args.json {
        let mut out = Map::new();
        out.insert("id".into(), draft.id.into());
        out.insert("revision".into(), draft.revision.into());
        out.insert("approval".into(), Value::Null);
        out.insert(
            "quorum".into(),
            draft.quorum_json(now).unwrap_or(Value::Null),
        );
        print_json(&Value::Object(out));
    }
    // The vote this call cast is the draft's newest.
    let holds = draft
        .quorum
        .votes
        .iter()
        .max_by_key(|v| v.version)
        .and_then(|v| v.expires_at.as_deref())
        .map(|until| {
            format!("; your approval holds until {until} (--ttl), and the approval the last one makes expires no later")
        })
        .unwrap_or_default();
    note(format!(
        "draft {}: your approval is recorded, {} of revision {} ({}); {} before it can be sent, so there is no approval JSON yet{holds}{}",
        draft.id,
        tally.label(),
        draft.revision,
        names.join(", "),
        match tally.missing() {
            1 => "one more person must approve it".to_owned(),
            n => format!("{n} more people must approve it"),
        },
        if args.out.is_some() {
            " (nothing was written to --out)"
        } else {
            ""
        }
    ));
}

/// Facts that moved (or could not be checked) since submission: the approval is made,
/// and dispatch will refuse it until they match again.
fn warn_if_drifted(draft: &Draft) {
    let drift = draft.drift();
    if matches!(
        drift.status,
        DriftStatus::Drifted | DriftStatus::CouldNotCheck
    ) {
        note(format!(
            "draft {}: {}. The approval holds the facts as submitted, so dispatch refuses (stale_facts) until they match again; ask for a new revision if they changed for good",
            draft.id,
            visible_inline(&drift.summary())
        ));
    }
}

/// The approval JSON: written to --out (and printed with --json), else printed.
fn hand_out_approval(
    args: &ApproveArgs,
    draft: &Draft,
    out_file: Option<out_file::PendingFile>,
) -> Exit {
    let approval = draft.approval.clone().unwrap_or(Value::Null);
    let text = format!("{}\n", jsjson::stringify_pretty(&approval));
    match (out_file, &args.out) {
        (Some(pending), Some(out)) => {
            if let Err(e) = pending.commit(&text) {
                return fail(
                    Exit::Refused,
                    format!(
                        "draft {} is approved, but the approval could not be written to {}: {e}; nothing was left there. Print it with: send-once approval {} {}",
                        draft.id,
                        out.display(),
                        args.draft.ledger,
                        draft.id
                    ),
                );
            }
            note(format!(
                "approved draft {} (revision {}) until {}; the approval is in {}",
                draft.id,
                draft.revision,
                approval["expiresAt"].as_str().unwrap_or("?"),
                out.display()
            ));
            if args.json {
                print_json(&approval);
            }
        }
        _ => print_json(&approval),
    }
    Exit::Ok
}

pub fn approval(args: &ApprovalArgs) -> Exit {
    let draft = match with_review(&args.draft.ledger, Access::ReadOnly, async |review| {
        review.head(args.draft.id).await
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    match &draft.approval {
        // A rejection or withdrawal overrides an earlier approval: handing it out would
        // let another tool (the Node library's dispatch) send what was turned down.
        Some(_) if matches!(draft.state, DraftState::Rejected | DraftState::Withdrawn) => fail(
            Exit::Failed,
            format!(
                "draft {} was {}{} after it was approved; its approval no longer holds",
                draft.id,
                draft.state.as_str(),
                draft
                    .decided_by
                    .as_deref()
                    .map(|by| format!(" by {}", visible_inline(by)))
                    .unwrap_or_default()
            ),
        ),
        Some(approval) => {
            print_json(approval);
            Exit::Ok
        }
        None => fail(
            Exit::Failed,
            match draft.quorum_text(clock()()) {
                Some(progress) => format!(
                    "draft {} has no approval yet: {}",
                    draft.id,
                    visible_inline(&progress)
                ),
                None => format!(
                    "draft {} has no approval (it is {})",
                    draft.id,
                    draft.state.as_str()
                ),
            },
        ),
    }
}

pub fn approvals(args: &ApprovalsArgs) -> Exit {
    let path = match ledger_or_default(args.ledger.as_ref()) {
        Ok(path) => path,
        Err(e) => return fail(Exit::Refused, e),
    };
    let queue = match with_review(&path, Access::ReadOnly, async |review| review.queue().await) {
        Ok(q) => q,
        Err(exit) => return exit,
    };
    let now = clock()();
    if args.json {
        print_json_array(queue.iter().map(|d| d.to_json(now)));
        return Exit::Ok;
    }
    if queue.is_empty() {
        print_stdout("Nothing waiting for review.\n");
        return Exit::Ok;
    }
    let mut out = format!(
        "{:>5}  {:>8}  {:>3}  {:<14}  {:<19}  {:<40}  {}\n",
        "ID", "AGE", "REV", "REVISION BY", "STATE", "WHAT", "CHANGES / FACTS"
    );
    for draft in &queue {
        let age = send_once::ledger::time::parse_date(&draft.created_at).map_or_else(
            || "?".to_owned(),
            |at| duration::format_duration((now - at).max(0) as f64),
        );
        let state = draft.state_label(now);
        let warning = if draft.suspicious() { "! " } else { "" };
        let changes = match (draft.approved_diff(), draft.previous_diff()) {
            (Some(d), _) => format!("{} since approved rev {}", d.summary(), d.from),
            (None, Some(d)) => format!("{} since rev {}", d.summary(), d.from),
            (None, None) => "new".to_owned(),
        };
        let author = draft
            .current()
            .and_then(|r| r.submitted_by.as_deref())
            .unwrap_or("?");
        out.push_str(&format!(
            "{:>5}  {:>8}  {:>3}  {:<14}  {:<19}  {:<40}  {}; {}\n",
            draft.id,
            age,
            draft.revision,
            clip(author, 14),
            state,
            format!("{warning}{}", clip(&what(draft), 38)),
            changes,
            visible_inline(&draft.drift().summary()),
        ));
        // Who has approved so far is what the next reviewer needs: they cannot be one.
        let tally = draft.tally(now);
        if draft.state == DraftState::Queued && draft.needs_quorum() && !tally.votes.is_empty() {
            out.push_str(&format!(
                "{:>5}  approved so far by {}; {} more needed\n",
                "",
                visible_inline(&tally.names().join(", ")),
                tally.missing()
            ));
        }
    }
    if queue.iter().any(Draft::suspicious) {
        out.push_str("\n! the payload holds control, escape, bidi or invisible characters: look at it with send-once draft show\n");
    }
    print_stdout(&out);
    Exit::Ok
}
