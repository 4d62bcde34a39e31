//! N-of-M approval: how many distinct people must approve a draft, whether the author
//! of a revision may be one of them, and the votes cast toward it.
//!
//! A draft keeps its number from the moment it is queued (`draft submit --approvals
//! N`, else the ledger's policy for its channel, else the ledger-wide policy, else 1).
//! Each approval of a draft that needs more than one is a vote on one revision; the
//! votes of a revision are counted in rounds: the Nth vote of a round makes the
//! approval JSON, and a round whose approval expired is spent, so approving again
//! starts the next one. A new revision starts from nothing: its votes are its own.
//! A draft that needs one approval has no votes and behaves exactly as before.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Draft;

/// The most approvers a policy or a draft may ask for.
pub const MAX_APPROVALS: i64 = 10;

/// One person's approval toward a draft that needs several, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vote {
    /// The revision it approves.
    pub revision: i64,
    /// Its round among that revision's votes (1 first).
    pub round: i64,
    /// Who approved.
    pub by: String,
    /// When (ISO 8601 UTC).
    pub at: String,
    /// The draft's version the vote made: every vote bumps it by one.
    pub version: i64,
    /// When the approver's yes stops holding (their `--ttl` from `at`; ISO 8601 UTC),
    /// short of the approval it is counted into. None: it holds until that approval.
    pub expires_at: Option<String>,
}

impl Vote {
    /// `{"by", "at", "expiresAt"}`, as `draft show --json` lists a vote.
    pub fn to_json(&self) -> Value {
        let mut one = Map::new();
        one.insert("by".into(), self.by.clone().into());
        one.insert("at".into(), self.at.clone().into());
        one.insert("expiresAt".into(), self.expires_at.clone().into());
        Value::Object(one)
    }

    /// Its approver's limit has passed at `now_ms` (an unreadable one has too).
    pub fn lapsed(&self, now_ms: i64) -> bool {
        self.expires_at
            .as_deref()
            .is_some_and(|at| crate::ledger::time::parse_date(at).is_none_or(|at| at <= now_ms))
    }
}

/// A vote about to be cast: judged, not yet stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewVote {
    /// The revision it approves.
    pub revision: i64,
    /// The round it counts in.
    pub round: i64,
    /// Who approves.
    pub by: String,
    /// When (ISO 8601 UTC).
    pub at: String,
    /// When it lapses (ISO 8601 UTC).
    pub expires_at: Option<String>,
}

/// What a draft needs before it is approved, and the votes of its current revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quorum {
    /// Distinct approvers needed (1 for a draft queued before quorums existed).
    pub required: i64,
    /// Whether the author of a revision may approve it.
    pub self_approval: bool,
    /// The current revision's votes, every round, oldest first.
    pub votes: Vec<Vote>,
}

impl Default for Quorum {
    /// One approval, by anyone: a draft as it was before quorums.
    fn default() -> Quorum {
        Quorum {
            required: 1,
            self_approval: true,
            votes: Vec::new(),
        }
    }
}

/// The rule a ledger gives new drafts, for one channel (`meta.channel`) or for all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// The channel it is for; None for the ledger-wide default.
    pub channel: Option<String>,
    /// Distinct approvers a new draft needs.
    pub approvals: i64,
    /// Whether the author of a revision may be one of them.
    pub self_approval: bool,
    /// When it was set (ISO 8601 UTC).
    pub set_at: String,
    /// Who set it.
    pub set_by: Option<String>,
}

/// The number and the self-approval rule a new draft gets, and where they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Distinct approvers needed.
    pub required: i64,
    /// Whether a revision's author may approve it.
    pub self_approval: bool,
    /// The policy it came from, when one applied.
    pub policy: Option<Policy>,
}

/// What a new draft on `channel` needs, given `asked` (`--approvals`): the policy for
/// the channel, else the ledger-wide one, is a floor that `asked` may raise but not
/// lower (an agent must not weaken the ledger's rule); with no policy, `asked` or 1.
/// Without a policy, a revision's author may approve it only when one approval is
/// enough, as before quorums: asking for several is asking for separate people.
pub fn rule_for(
    policies: &[Policy],
    channel: &Channel<'_>,
    asked: Option<i64>,
) -> Result<Rule, String> {
    let default = || policies.iter().find(|p| p.channel.is_none());
    let of = |c: &str| {
        policies
            .iter()
            .find(|p| p.channel.as_deref().is_some_and(|p| same_channel(p, c)))
    };
    let policy = match channel {
        Channel::Known(c) => of(c).or_else(default),
        // The key was not made from a channel the ledger can read, so any channel
        // the draft claims is only a claim: the ledger-wide default holds (raised by
        // the claimed channel's policy, when that asks for more); with no default,
        // the strictest policy the ledger has, never none.
        Channel::Unknown(claimed) => {
            let candidates: Vec<&Policy> = match default() {
                Some(d) => std::iter::once(d).chain(claimed.and_then(of)).collect(),
                None => claimed
                    .and_then(of)
                    .map(|p| vec![p])
                    .unwrap_or_else(|| policies.iter().collect()),
            };
            candidates
                .into_iter()
                .max_by_key(|p| (p.approvals, !p.self_approval))
        }
    }
    .cloned();
    match policy {
        Some(policy) => {
            if let Some(asked) = asked
                && asked < policy.approvals
            {
                return Err(format!(
                    "--approvals {asked} is below the ledger's policy for {} ({} approvals); a draft may ask for more, never fewer",
                    policy_scope(policy.channel.as_deref()),
                    policy.approvals
                ));
            }
            Ok(Rule {
                required: asked.unwrap_or(policy.approvals).max(policy.approvals),
                self_approval: policy.self_approval,
                policy: Some(policy),
            })
        }
        None => {
            let required = asked.unwrap_or(1);
            Ok(Rule {
                required,
                self_approval: required == 1,
                policy: None,
            })
        }
    }
}

/// A new draft's channel, as far as the ledger can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel<'a> {
    /// Its send key was made from this channel (with its `to` and `intent`).
    Known(&'a str),
    /// Its key was given as is: the channel its meta names, if any, is a claim.
    Unknown(Option<&'a str>),
}

/// The channel as the send key reads it (trimmed and lower-cased), so a policy set
/// for `payments` holds for a draft keyed on `PAYMENTS `.
pub fn normalise_channel(channel: &str) -> String {
    crate::ledger::key::js_trim(channel).to_lowercase()
}

/// Two spellings of a channel are one for a policy when the key makes them one, or
/// when they are one to a reader ([`identity`]): a policy errs toward holding.
pub fn same_channel(a: &str, b: &str) -> bool {
    normalise_channel(a) == normalise_channel(b) || identity(a) == identity(b)
}

/// Who a name is, for "the author cannot approve" and "one person counts once": the
/// name without invisible and control characters, NFKC, mapped by the UTS #39
/// confusable skeleton, lower-cased, mapped again, and only then stripped of marks,
/// white space and ASCII punctuation, so `Agent`, ` agent`, a zero-width space, a
/// Cyrillic `а`, a fullwidth `ａ`, a small capital `ᴀ`, a Cherokee `Ꭰ`, an en dash or
/// an ideographic full stop are not someone new. The map comes before the fold: what
/// it maps a look-alike to (`–` to `-`, `Ꭰ` to `D`) is then folded as the letter or
/// the punctuation it looks like. Names are stored as typed; only comparisons use this.
pub fn identity(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    use unicode_security::confusable_detection::skeleton;
    let visible: String = person_part(name)
        .chars()
        .filter(|c| !crate::text::is_suspicious(*c))
        .collect();
    // Marks, spaces, punctuation and symbols of any script are dropped, not compared:
    // `José` is `Jose`, `ag ent`, `agent.` and `ag–ent` are `agent`. Two people whose
    // names differ only there must tell them apart another way; one person must not
    // pass for two by adding an accent or a dash. They are dropped before the map and
    // after it, as the map turns some letters into punctuation (`—` into `ー`).
    let letters = |text: &str| -> String {
        text.nfd()
            .filter(|c| c.is_alphanumeric() && !is_combining_mark(*c))
            .collect()
    };
    let normal: String = visible
        .nfkc()
        .map(crate::ledger::key::small_capital_letter)
        .collect();
    let mapped: String = skeleton(&letters(&normal)).collect();
    // Lower-casing can make a look-alike of its own (a capital whose small form is in
    // the confusables), so the map runs again.
    let mapped_again: String = skeleton(&letters(&mapped.to_lowercase())).collect();
    // The map takes a capital I to l, which a lower-case i is not: `RITA` would be
    // `rlta`, another person than `rita`. An i is counted as the l it may stand for,
    // so `rita`, `RITA` and `rIta` are one person (and `ali` is `all`: two people
    // whose names differ only there tell themselves apart another way).
    letters(&mapped_again.to_lowercase())
        .nfkc()
        .map(|c| if c == 'i' { 'l' } else { c })
        .collect()
}

/// The person a name names, without what says where or as what they act: a trailing
/// `(ops)`, a mail domain (`dana@corp`, `dana@example.com`), a `+tag` (`dana+ops`).
/// One person must not pass for a second approver by signing as their role; two people
/// whose names differ only there tell themselves apart another way.
fn person_part(name: &str) -> &str {
    let mut person = name.trim();
    if person.ends_with(')')
        && let Some(open) = person.rfind('(')
        && open > 0
    {
        person = person[..open].trim_end();
    }
    if let Some(at) = person.find('@').filter(|&at| at > 0) {
        person = &person[..at];
    }
    if let Some(plus) = person.find('+').filter(|&plus| plus > 0) {
        person = &person[..plus];
    }
    person
}

/// A stored number of approvers as the rules read it: none (a draft from before the
/// quorum) is one; a number outside 1 to [`MAX_APPROVALS`], or anything but a number
/// (a row edited by hand), is the strictest, so damage never lowers the bar.
pub fn stored_approvals(stored: Option<i64>) -> i64 {
    match stored {
        None => 1,
        Some(n) if (1..=MAX_APPROVALS).contains(&n) => n,
        Some(_) => MAX_APPROVALS,
    }
}

/// A stored self-approval rule as the rules read it: none (a draft from before the
/// quorum) allows it, as before; 1 allows it; anything else does not.
pub fn stored_self_approval(stored: Option<i64>) -> bool {
    matches!(stored, None | Some(1))
}

/// The longest name that names a person deciding: it is printed in every message and
/// in an approval's `approvedBy`.
pub const MAX_NAME_CHARS: usize = 100;

/// Why `name` cannot name the person deciding, if it cannot: it holds control,
/// escape, bidi or invisible characters (it would not read as it compares), or a comma
/// (which separates approvers in an approval's `approvedBy`). Every path that records
/// who decided checks it: the flags, `SEND_ONCE_USER`, the TUI's forms. An empty name
/// is the caller's to refuse: the Node library's `approve` takes one.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().count() > MAX_NAME_CHARS {
        Some("is longer than 100 characters")
    } else if name.chars().any(crate::text::is_suspicious) {
        Some("holds control, escape, bidi or invisible characters")
    } else if name.contains(',') {
        Some("holds a comma, which separates approvers' names in an approval")
    } else if !name.trim().is_empty() && identity(name).is_empty() {
        Some("names nobody: without its spaces, marks and punctuation nothing is left")
    } else {
        None
    }
}

/// Whether `a` and `b` name one person ([`identity`]).
pub fn same_person(a: &str, b: &str) -> bool {
    identity(a) == identity(b)
}

/// "channel email" or "every channel", for messages.
pub fn policy_scope(channel: Option<&str>) -> String {
    match channel {
        Some(c) => format!("channel {}", crate::text::visible_inline(c)),
        None => "every channel".to_owned(),
    }
}

/// Whether `n` may be a number of approvers, or why not.
pub fn check_approvals(n: i64) -> Result<i64, String> {
    if (1..=MAX_APPROVALS).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "--approvals {n}: give a number of distinct approvers from 1 to {MAX_APPROVALS}"
        ))
    }
}

/// The votes that count now toward the current revision's approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The round they are in: a new vote counts in it.
    pub round: i64,
    /// Its votes that hold, oldest first: one per person, their latest.
    pub votes: Vec<Vote>,
    /// Its votes whose approver's limit passed before the approval was made: not
    /// counted, and that person may approve again.
    pub lapsed: Vec<Vote>,
    /// Distinct approvers needed.
    pub required: i64,
    /// The round made the draft's approval, and it still holds.
    pub complete: bool,
}

impl Tally {
    /// Who approved in this round, in order.
    pub fn names(&self) -> Vec<&str> {
        self.votes.iter().map(|v| v.by.as_str()).collect()
    }

    /// "approved 1 of 2".
    pub fn label(&self) -> String {
        format!("approved {} of {}", self.votes.len(), self.required)
    }

    /// How many more approvals it needs.
    pub fn missing(&self) -> i64 {
        (self.required - self.votes.len() as i64).max(0)
    }
}

impl Draft {
    /// It needs more than one approver.
    pub fn needs_quorum(&self) -> bool {
        self.quorum.required > 1
    }

    /// The current revision's votes that count at `now_ms`: the latest round's, or
    /// none when that round's approval has expired (the next round starts empty).
    pub fn tally(&self, now_ms: i64) -> Tally {
        let votes: Vec<&Vote> = self
            .quorum
            .votes
            .iter()
            .filter(|v| v.revision == self.revision)
            .collect();
        let round = votes.iter().map(|v| v.round).max().unwrap_or(1);
        let mut in_round: Vec<Vote> = votes
            .into_iter()
            .filter(|v| v.round == round)
            .cloned()
            .collect();
        in_round.sort_by_key(|v| v.version);
        // While the approval holds every vote it counted holds (it expires at the
        // earliest of them), so a lapsed vote is one that did not make it.
        let (lapsed, live): (Vec<Vote>, Vec<Vote>) =
            in_round.into_iter().partition(|v| v.lapsed(now_ms));
        let lapsed: Vec<Vote> = lapsed
            .into_iter()
            .filter(|old| !live.iter().any(|v| same_person(&v.by, &old.by)))
            .collect();
        // The store keeps one vote per person, but a row put in by hand under another
        // spelling must not count twice: each person's latest counts.
        let mut in_round: Vec<Vote> = Vec::with_capacity(live.len());
        for vote in live {
            in_round.retain(|earlier| !same_person(&earlier.by, &vote.by));
            in_round.push(vote);
        }
        let made = self.approved_revision == Some(self.revision)
            && self.approval.is_some()
            && in_round.len() as i64 >= self.quorum.required;
        let required = self.quorum.required;
        if made && self.approval_expired(now_ms) {
            return Tally {
                round: round + 1,
                votes: Vec::new(),
                lapsed: Vec::new(),
                required,
                complete: false,
            };
        }
        Tally {
            round,
            votes: in_round,
            lapsed,
            required,
            complete: made,
        }
    }

    /// "approved 1 of 2" while a draft that needs several approvers does not have
    /// them all for its current revision; None otherwise.
    pub fn quorum_label(&self, now_ms: i64) -> Option<String> {
        // A rejected or withdrawn draft is that, not a tally.
        if !self.needs_quorum() || !self.state.is_open() {
            return None;
        }
        let tally = self.tally(now_ms);
        // "needs 2" until someone approves: "approved 0 of 2" reads like approved.
        (!tally.complete).then(|| match tally.votes.len() {
            0 => format!("needs {}", tally.required),
            _ => tally.label(),
        })
    }

    /// Every version since `seen` was made by a vote on the current revision: the
    /// draft changed only by other people's approvals of what was shown.
    pub fn only_votes_since(&self, seen: i64) -> bool {
        if seen >= self.version {
            return seen == self.version;
        }
        let votes = self
            .quorum
            .votes
            .iter()
            .filter(|v| v.revision == self.revision && v.version > seen)
            .count() as i64;
        votes == self.version - seen
    }

    /// The quorum as JSON, for a draft that needs more than one approver: required,
    /// approved so far (this round), who and when, and whether it is complete.
    pub fn quorum_json(&self, now_ms: i64) -> Option<Value> {
        if !self.needs_quorum() {
            return None;
        }
        let tally = self.tally(now_ms);
        let mut out = Map::new();
        out.insert("required".into(), tally.required.into());
        out.insert("approved".into(), (tally.votes.len() as i64).into());
        out.insert("complete".into(), tally.complete.into());
        out.insert("revision".into(), self.revision.into());
        out.insert("round".into(), tally.round.into());
        out.insert("selfApproval".into(), self.quorum.self_approval.into());
        out.insert(
            "approvers".into(),
            Value::Array(tally.votes.iter().map(Vote::to_json).collect()),
        );
        if !tally.lapsed.is_empty() {
            out.insert(
                "lapsed".into(),
                Value::Array(tally.lapsed.iter().map(Vote::to_json).collect()),
            );
        }
        Some(Value::Object(out))
    }

    /// Who approved so far and what is left, as a person reads it: "approved 1 of 2
    /// (dana at T); one more needed". None for a draft that needs one approver.
    pub fn quorum_text(&self, now_ms: i64) -> Option<String> {
        if !self.needs_quorum() || !self.state.is_open() {
            return None;
        }
        let tally = self.tally(now_ms);
        let who = tally
            .votes
            .iter()
            .map(|v| match &v.expires_at {
                // A partial vote lapses at its approver's limit: say when.
                Some(until) if !tally.complete => {
                    format!("{} at {}, holds until {until}", v.by, v.at)
                }
                _ => format!("{} at {}", v.by, v.at),
            })
            .collect::<Vec<_>>()
            .join("; ");
        let who = if who.is_empty() {
            String::new()
        } else {
            format!(" ({who})")
        };
        let left = match tally.missing() {
            0 => "complete".to_owned(),
            1 => "one more needed".to_owned(),
            n => format!("{n} more needed"),
        };
        let rule = if self.quorum.self_approval {
            ""
        } else {
            "; the revision's author cannot be one of them"
        };
        let lapsed = tally
            .lapsed
            .iter()
            .map(|v| {
                format!(
                    "; {}'s approval at {} lapsed at {} and is not counted",
                    v.by,
                    v.at,
                    v.expires_at.as_deref().unwrap_or("?")
                )
            })
            .collect::<String>();
        let so_far = match tally.votes.len() {
            0 => format!("needs {} approvals", tally.required),
            _ => tally.label(),
        };
        Some(format!(
            "{so_far} of revision {}{who}; {left}{rule}{lapsed}",
            self.revision
        ))
    }
}

/// "dana" / "dana and sam" / "dana, sam and lee": names for a message.
pub fn names_text(names: &[&str]) -> String {
    match names {
        [] => "nobody".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// H6: the spellings of `dana` that passed the two-person rule fold to `dana`;
    /// names of other people stay apart; names of punctuation alone name nobody.
    #[test]
    fn look_alike_names_fold_after_the_confusable_map() {
        for spelling in [
            "d\u{1d00}na",
            "\u{13a0}ana",
            "d\u{2013}ana",
            "d\u{2014}ana",
            "d\u{2010}ana",
            "d\u{2019}ana",
            "d\u{b7}ana",
            "dana\u{ff61}",
            "dana\u{3001}",
            "D\u{e1}na",
            "DANA",
            "d\u{430}na",
            "\u{ff44}\u{ff41}\u{ff4e}\u{ff41}",
            "\u{1d41d}\u{1d41a}\u{1d427}\u{1d41a}",
            "d\u{251}na",
            " dana ",
            "dana@corp",
            "dana@example.com",
            "dana+ops",
            "dana (ops)",
            "Dana+ops@example.com (on call)",
        ] {
            assert_eq!(identity(spelling), identity("dana"), "{spelling:?}");
        }
        // A capital I is mapped to l by the confusable map, before the fold: `RITA` must
        // still be `rita`, and `Ian` still `lan` (hostile MCP round, L5).
        for (a, b) in [
            ("RITA", "rita"),
            ("Rita", "r\u{456}ta"),
            ("IAN", "ian"),
            ("Ian", "lan"),
        ] {
            assert_eq!(identity(a), identity(b), "{a:?} {b:?}");
        }
        for letter in 'a'..='z' {
            let upper = letter.to_ascii_uppercase().to_string();
            assert_eq!(identity(&upper), identity(&letter.to_string()), "{letter}");
        }
        for other in ["sam", "dan", "danna", "\u{3b4}\u{3ac}\u{3bd}\u{3b1}"] {
            assert_ne!(identity(other), identity("dana"), "{other:?}");
        }
        for nobody in ["...", "!!!", "\u{2014}", "\u{2019}\u{2019}"] {
            assert!(name_problem(nobody).is_some(), "{nobody:?}");
        }
        assert_eq!(name_problem("dana"), None);
        assert_eq!(
            name_problem(""),
            None,
            "an empty name is the caller's to refuse"
        );
    }
}
