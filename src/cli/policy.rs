//! `send-once policy [LEDGER]`: the ledger's approval policy, printed or set. It gives
//! each new draft its number of distinct approvers (by `meta.channel`, else the
//! ledger-wide default, else 1) and says whether a revision's author may be one.

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::{Access, LedgerLocation};
use send_once::review::Policy;
use send_once::review::quorum::{check_approvals, policy_scope};
use send_once::text::visible_inline;

use super::ledger_arg::{by_or_default, check_by, ledger_or_default};
use super::queue_arg::with_review;
use super::{Exit, fail, note, print_json, print_stdout};

pub const POLICY_HELP: &str = "\
Without --approvals, prints the policy. With it, sets the policy for --channel C (the
drafts whose meta.channel is C), or for every channel without one of its own; each
change is a `policy` decision in the decision log. Drafts already queued keep the
number they were given; `draft submit --approvals N` may ask for more than the policy,
never fewer. The author of a revision (its submitter, or the reviewer who edited it)
cannot approve it unless --allow-self-approval; with no policy at all, a draft that
needs one approval may be approved by anyone, as before.

The queue lives in SQLite and Postgres ledgers; a JSON Lines ledger has none, so it has
no policy either.

Exit codes:
  0  printed, or set
  2  bad input (nothing is changed), or the ledger could not be used";

#[derive(Args, Debug)]
pub struct PolicyArgs {
    /// The ledger, SQLite or Postgres (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Distinct people who must approve each new draft, 1 to 10
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub approvals: Option<String>,
    /// Only for drafts whose meta.channel is this (default: every channel without a policy of its own)
    #[arg(long, value_name = "C")]
    pub channel: Option<String>,
    /// The author of a revision may count as one of its approvers
    #[arg(long, conflicts_with = "no_self_approval")]
    pub allow_self_approval: bool,
    /// The author of a revision may not approve it (the default when setting a policy)
    #[arg(long)]
    pub no_self_approval: bool,
    /// Who sets it, for the decision log (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Print the policy as JSON
    #[arg(long)]
    pub json: bool,
}

/// `--approvals`'s number, or why it is not one.
pub fn approvals_flag(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(n) => check_approvals(n),
        Err(_) => Err(format!(
            "--approvals {}: give a number of distinct approvers from 1 to {}",
            visible_inline(text),
            send_once::review::quorum::MAX_APPROVALS
        )),
    }
}

fn check_channel(channel: Option<&str>) -> Result<(), String> {
    let Some(channel) = channel else {
        return Ok(());
    };
    if channel.trim().is_empty() {
        return Err(
            "--channel names no channel: give the meta.channel the policy is for, or leave it out for every channel"
                .to_owned(),
        );
    }
    if channel.chars().any(send_once::text::is_suspicious) {
        return Err(format!(
            "--channel {} holds control, escape, bidi or invisible characters; give the channel's name as agents write it in meta.channel",
            visible_inline(channel)
        ));
    }
    Ok(())
}

fn policy_json(policy: &Policy) -> Value {
    let mut out = Map::new();
    out.insert("channel".into(), policy.channel.clone().into());
    out.insert("approvals".into(), policy.approvals.into());
    out.insert("selfApproval".into(), policy.self_approval.into());
    out.insert("setAt".into(), policy.set_at.clone().into());
    out.insert("setBy".into(), policy.set_by.clone().into());
    Value::Object(out)
}

fn self_rule(self_approval: bool) -> &'static str {
    if self_approval {
        "a revision's author may be one of them"
    } else {
        "a revision's author cannot approve it"
    }
}

fn policy_text(policy: &Policy) -> String {
    format!(
        "{:<16} {} approval{}; {} (set {}{})",
        visible_inline(&policy_scope(policy.channel.as_deref())),
        policy.approvals,
        if policy.approvals == 1 { "" } else { "s" },
        self_rule(policy.self_approval),
        policy.set_at,
        policy
            .set_by
            .as_deref()
            .map(|by| format!(" by {}", visible_inline(by)))
            .unwrap_or_default()
    )
}

pub fn policy(args: &PolicyArgs) -> Exit {
    // Everything is checked before the ledger is opened: bad input changes nothing.
    let approvals = match args.approvals.as_deref().map(approvals_flag).transpose() {
        Ok(n) => n,
        Err(message) => return fail(Exit::Refused, message),
    };
    if let Err(message) = check_channel(args.channel.as_deref()).and(check_by(args.by.as_deref())) {
        return fail(Exit::Refused, message);
    }
    let location = match ledger_or_default(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    let Some(approvals) = approvals else {
        if args.channel.is_some() || args.allow_self_approval || args.no_self_approval {
            return fail(
                Exit::Refused,
                "give --approvals N to set a policy (--channel and the self-approval flags only go with it); without flags, policy prints it",
            );
        }
        return show(&location, args.json);
    };
    let by = by_or_default(args.by.as_deref());
    let channel = args.channel.clone();
    // The policy is the natural first step on a new ledger, so setting one makes it,
    // as a first draft does.
    let set = match with_review(&location, Access::Create, async |review| {
        review
            .set_policy(channel, approvals, args.allow_self_approval, by)
            .await
    }) {
        Ok(policy) => policy,
        Err(exit) => return exit,
    };
    if args.json {
        let mut out = policy_json(&set.policy);
        if let Value::Object(fields) = &mut out {
            fields.insert("changed".into(), set.changed.into());
            fields.insert(
                "before".into(),
                set.before.as_ref().map_or(Value::Null, policy_json),
            );
        }
        print_json(&out);
    } else if !set.changed {
        print_stdout(&format!("{}\n", policy_text(&set.policy)));
        note("the policy was already this; nothing changed");
    } else {
        print_stdout(&format!("{}\n", policy_text(&set.policy)));
        if let Some(before) = &set.before {
            note(format!(
                "it was {} approval{}, {}",
                before.approvals,
                if before.approvals == 1 { "" } else { "s" },
                self_rule(before.self_approval)
            ));
        }
        note("drafts queued from now on get this number; drafts already queued keep theirs");
    }
    Exit::Ok
}

fn show(location: &LedgerLocation, json: bool) -> Exit {
    let policies = match with_review(location, Access::ReadOnly, async |review| {
        review.policies().await
    }) {
        Ok(policies) => policies,
        Err(exit) => return exit,
    };
    if json {
        print_json(&Value::Array(policies.iter().map(policy_json).collect()));
        return Exit::Ok;
    }
    if policies.is_empty() {
        print_stdout(
            "No approval policy: each draft needs 1 approval, by anyone (or the distinct approvers its draft submit --approvals asked for, none of them its revision's author).\n",
        );
        return Exit::Ok;
    }
    let mut out = String::new();
    for policy in &policies {
        out.push_str(&policy_text(policy));
        out.push('\n');
    }
    print_stdout(&out);
    Exit::Ok
}
