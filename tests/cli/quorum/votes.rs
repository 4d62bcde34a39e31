//! N-of-M approval, who counts and for how long, through the binary on SQLite:
//! one person cannot pass for two by respelling a name (Q1), a channel policy holds
//! whatever the channel's case or spacing and for drafts whose channel is not known
//! (Q2), nobody who wrote a revision approves the draft (Q3), a closed draft reads
//! as closed, not as a tally (Q5); a dispatched draft is named by its dispatch, not
//! as its approval (E7); a rerun's identical submission keeps the votes (Q11); the
//! log says what a policy and a vote changed (Q8, Q10); and a vote put in by hand
//! breaks `decisions verify` (Q7).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::harness::queue::{Queue, QueueFiles};
use crate::harness::*;

/// 2027-01-15T08:00:00.000Z.
const T0: u64 = 1_800_000_000_000;

fn cli<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER");
    cmd
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    cli(args).output().unwrap()
}

fn refused(o: &Output, what: &str, wanted: &[&str]) {
    expect_exit(o, 2, what);
    for w in wanted {
        assert!(
            stderr(o).contains(w),
            "{what}: {w:?} not in stderr {:?}",
            stderr(o)
        );
    }
}

trait Steps: QueueFiles {
    fn payload(&self, name: &str, body: &str) -> String {
        let p: PathBuf = self.dir().join(name);
        std::fs::write(&p, json!({"body": body}).to_string()).unwrap();
        p.display().to_string()
    }

    fn policy(&self, args: &[&str]) {
        let mut all = vec!["policy", self.l(), "--by", "ops"];
        all.extend_from_slice(args);
        expect_exit(&run(&all), 0, "policy");
    }

    /// `draft submit --json` by agent with `key_args` (`--channel …` or `--key …`):
    /// the draft's id and the number of approvers it was given.
    fn submit(&self, key_args: &[&str]) -> (String, i64) {
        let p = self.payload(&format!("p{}.json", key_args.join("_").len()), "pay 9");
        let mut args = vec![
            "draft",
            "submit",
            self.l(),
            "--payload",
            &p,
            "--by",
            "agent",
        ];
        args.extend_from_slice(key_args);
        args.push("--json");
        let o = run(&args);
        expect_exit(&o, 0, "draft submit");
        let out = json_stdout(&o, "draft submit");
        (
            out["id"].to_string(),
            out["approvalsRequired"].as_i64().unwrap_or(1),
        )
    }

    /// `approve` of the revision `draft show` gives as current: what a reviewer read.
    fn approve(&self, id: &str, by: &str) -> Output {
        let shown = run(&["draft", "show", self.l(), id, "--json"]);
        let seen = json_stdout(&shown, "draft show")["revision"].to_string();
        run(&["approve", self.l(), id, "--by", by, "--revision", &seen])
    }

    fn approved(&self, id: &str) -> Value {
        let o = run(&["draft", "show", self.l(), id, "--json"]);
        expect_exit(&o, 0, "draft show");
        json_stdout(&o, "draft show")["quorum"].clone()
    }
}

impl Steps for Queue {}

/// A new SQLite ledger, made with `init`.
fn new_queue() -> Queue {
    let q = Queue::sqlite();
    expect_exit(&run(&["init", q.l()]), 0, "init");
    q
}

fn channel(c: &str, intent: &str) -> Vec<String> {
    ["--channel", c, "--to", "cy@x.com", "--intent", intent]
        .map(str::to_owned)
        .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_respelled_name_is_the_same_person_for_the_author_and_for_counting_once() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, required) = q.submit(&strs(&channel("email", "t")));
    assert_eq!(required, 2);

    // The submitter, however spelled: case, spaces, NBSP, fullwidth, Cyrillic а.
    for name in [
        "Agent",
        "AGENT",
        " agent",
        "agent ",
        "agent\u{a0}",
        "\u{ff41}gent",
        "\u{430}gent",
        "ag\u{435}nt",
        // Combining marks and inner spaces (finding T2).
        "agent\u{300}",
        "agent\u{335}",
        "agent\u{338}",
        "a\u{301}gent",
        "ag ent",
    ] {
        refused(
            &q.approve(&id, name),
            &format!("{name:?} as the submitter"),
            &["submitted revision 1", "the same name as agent"],
        );
    }
    assert_eq!(q.approved(&id)["approved"], 0);

    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    for name in ["Dana", "DANA", " dana ", "\u{ff44}ana", "d\u{430}na"] {
        refused(
            &q.approve(&id, name),
            &format!("{name:?} after dana"),
            &["already approved revision 1", "the same name as dana"],
        );
    }
    assert_eq!(q.approved(&id)["approved"], 1);

    let o = q.approve(&id, "sam");
    expect_exit(&o, 0, "sam completes it");
    let approval = json_stdout(&o, "approval");
    assert_eq!(approval["approvers"], json!(["dana", "sam"]));
}

/// A later revision by the draft's own submitter is a resubmission: its author's
/// approval is refused as theirs, not as an edit nobody made (operator's shift,
/// session 44: AK6).
#[test]
fn a_resubmitters_approval_is_refused_as_the_submitters_not_an_editors() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let key = channel("email", "resubmitted");
    let (id, _) = q.submit(&strs(&key));
    let p = q.payload("again.json", "pay 10");
    let mut again = vec!["draft", "submit", q.l(), "--payload", &p, "--by", "agent"];
    again.extend(strs(&key));
    expect_exit(&run(&again), 0, "resubmit");
    refused(
        &q.approve(&id, "Agent"),
        "the resubmitter",
        &["submitted revision 2", "the same name as agent"],
    );
}

/// H6: after dana's approval of a two-person draft, the nine spellings of her name that
/// completed it before (a small capital, Cherokee Ꭰ, dashes, a typographic apostrophe,
/// a middle dot, ideographic stops) are refused as dana; names of punctuation alone name
/// nobody; sam completes it.
#[test]
fn look_alike_spellings_of_an_approver_pass_for_no_one_else() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, _) = q.submit(&strs(&channel("email", "t")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    for name in [
        "d\u{1d00}na",
        "\u{13a0}ana",
        "d\u{2013}ana",
        "d\u{2014}ana",
        "d\u{2010}ana",
        "d\u{2019}ana",
        "d\u{b7}ana",
        "dana\u{ff61}",
        "dana\u{3001}",
    ] {
        refused(
            &q.approve(&id, name),
            &format!("{name:?} after dana"),
            &["already approved revision 1", "the same name as dana"],
        );
    }
    for nobody in ["...", "!!!", "\u{2014}"] {
        let o = run(&["approve", q.l(), &id, "--by", nobody]);
        expect_exit(&o, 2, &format!("--by {nobody:?}"));
        assert!(stderr(&o).contains("names nobody"), "{}", stderr(&o));
    }
    assert_eq!(q.approved(&id)["approved"], 1);
    let o = q.approve(&id, "sam");
    expect_exit(&o, 0, "sam completes it");
    assert_eq!(
        json_stdout(&o, "approval")["approvers"],
        json!(["dana", "sam"])
    );
}

#[test]
fn a_name_with_invisible_or_control_characters_or_a_comma_is_refused_and_changes_nothing() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, _) = q.submit(&strs(&channel("email", "t")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    let p = q.payload("x.json", "x");
    let before = snapshot(q.dir());

    for name in [
        "dana\u{200b}",
        "agent\u{200b}",
        "\u{202e}anad",
        "dana\u{1b}[31m",
        "sa\u{ad}m",
    ] {
        // Straight to approve, as a refused name must change nothing: the steps' own
        // `draft show` for the revision would open the ledger first.
        let o = run(&["approve", q.l(), &id, "--by", name]);
        refused(
            &o,
            &format!("--by {name:?}"),
            &["--by", "control, escape, bidi or invisible characters"],
        );
        assert!(
            !stderr(&o).contains('\u{1b}'),
            "raw escape in {:?}",
            stderr(&o)
        );
    }
    refused(
        &run(&["approve", q.l(), &id, "--by", "sam, erin"]),
        "--by with a comma",
        &["--by", "comma"],
    );
    let o = cli(&["approve", q.l(), &id])
        .env("SEND_ONCE_USER", "sam\u{200b}")
        .output()
        .unwrap();
    refused(&o, "SEND_ONCE_USER", &["SEND_ONCE_USER", "invisible"]);
    let o = run(&[
        "draft",
        "submit",
        q.l(),
        "--payload",
        &p,
        "--key",
        "k1",
        "--by",
        "ag\u{200b}ent",
    ]);
    refused(&o, "draft submit --by", &["--by", "invisible"]);
    assert!(before == snapshot(q.dir()), "a refused name wrote nothing");
}

#[test]
fn a_channel_policy_holds_whatever_the_channels_case_or_spacing() {
    let q = new_queue();
    q.policy(&["--approvals", "2", "--channel", "payments"]);
    // Stored as the key reads a channel.
    q.policy(&["--approvals", "3", "--channel", " SMS "]);
    let o = run(&["policy", q.l(), "--json"]);
    let shown = json_stdout(&o, "policy --json");
    let channels: Vec<&str> = shown
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["channel"].as_str())
        .collect();
    assert!(channels.contains(&"sms"), "{shown}");

    for (i, c) in ["PAYMENTS", "Payments", " payments", "payments "]
        .iter()
        .enumerate()
    {
        let (id, required) = q.submit(&strs(&channel(c, &format!("pay-{i}"))));
        assert_eq!(required, 2, "--channel {c:?}");
        refused(
            &q.approve(&id, "agent"),
            &format!("agent approves its {c:?} draft"),
            &["agent submitted revision 1"],
        );
    }
    let (_, required) = q.submit(&strs(&channel("sms", "code")));
    assert_eq!(required, 3, "an sms draft under the ' SMS ' policy");
}

#[test]
fn a_draft_whose_channel_is_not_known_is_under_a_policy_never_none() {
    let q = new_queue();
    q.policy(&["--approvals", "2", "--channel", "payments"]);
    // No ledger-wide default: a key given as is gets the strictest policy there is.
    let (_, required) = q.submit(&["--key", "k-1"]);
    assert_eq!(required, 2, "--key with no channel, no default");

    q.policy(&["--approvals", "3", "--channel", "payments"]);
    q.policy(&["--approvals", "2"]);
    let (_, required) = q.submit(&["--key", "k-2"]);
    assert_eq!(required, 2, "--key: the ledger-wide default");
    let (_, required) = q.submit(&["--key", "k-3", "--meta", r#"{"channel":"marketing"}"#]);
    assert_eq!(
        required, 2,
        "--key claiming a channel without a policy: the default"
    );
    let (_, required) = q.submit(&["--key", "k-4", "--meta", r#"{"channel":"PAYMENTS"}"#]);
    assert_eq!(required, 3, "--key claiming payments: its stricter policy");
    let (_, required) = q.submit(&strs(&channel("marketing", "m")));
    assert_eq!(required, 2, "a known channel without a policy: the default");
}

#[test]
fn a_meta_channel_contradicting_the_keys_channel_is_refused_and_queues_nothing() {
    let q = new_queue();
    q.policy(&["--approvals", "2", "--channel", "payments"]);
    let p = q.payload("c.json", "pay");
    let before = snapshot(q.dir());
    let mut args = vec!["draft", "submit", q.l(), "--payload", &p, "--by", "agent"];
    let key = channel("payments", "pay-1");
    args.extend(strs(&key));
    args.extend(["--meta", r#"{"channel":"other"}"#]);
    refused(
        &run(&args),
        "--meta channel other",
        &["--meta's channel", "other", "payments"],
    );
    assert!(before == snapshot(q.dir()), "nothing was queued");
    // The same channel respelled is no contradiction.
    let last = args.len() - 1;
    args[last] = r#"{"channel":"Payments"}"#;
    let o = run(&args);
    expect_exit(&o, 0, "--meta channel Payments");
    let o = run(&["approvals", q.l(), "--json"]);
    assert!(stdout(&o).contains("\"required\": 2"), "{}", stdout(&o));
}

#[test]
fn nobody_who_wrote_a_revision_approves_the_draft() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, _) = q.submit(&strs(&channel("payments", "pay")));
    let e = q.payload("e.json", "pay 10");
    expect_exit(
        &run(&[
            "draft",
            "edit",
            q.l(),
            &id,
            "--payload",
            &e,
            "--by",
            "sam",
            "--seen-revision",
            "1",
        ]),
        0,
        "sam edits",
    );
    refused(
        &q.approve(&id, "agent"),
        "the submitter of revision 1",
        &["agent submitted revision 1"],
    );
    refused(&q.approve(&id, "Sam"), "the editor", &["edited revision 2"]);
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    let o = q.approve(&id, "erin");
    expect_exit(&o, 0, "erin completes it");
    assert_eq!(
        json_stdout(&o, "approval")["approvers"],
        json!(["dana", "erin"])
    );
}

#[test]
fn a_rejected_or_withdrawn_draft_reads_as_that_not_as_a_tally() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    for (n, close) in [
        vec![
            "reject",
            q.l(),
            "",
            "--reason",
            "wrong amount",
            "--by",
            "sam",
        ],
        vec!["draft", "withdraw", q.l(), "", "--by", "agent"],
    ]
    .into_iter()
    .enumerate()
    {
        let (id, _) = q.submit(&strs(&channel("payments", &format!("p{n}"))));
        expect_exit(&q.approve(&id, "dana"), 0, "dana");
        let close: Vec<&str> = close
            .into_iter()
            .map(|a| if a.is_empty() { id.as_str() } else { a })
            .collect();
        expect_exit(&run(&close), 0, close[0]);
        let o = run(&["draft", "show", q.l(), &id]);
        let head = stdout(&o).lines().next().unwrap_or_default().to_owned();
        assert!(!head.contains("approved 1 of 2"), "{head}");
        let word = if n == 0 { "rejected" } else { "withdrawn" };
        assert!(head.contains(word), "{head}");
        let o = run(&["approvals", q.l(), "--headless"]);
        assert!(!stdout(&o).contains("approved 1 of 2"), "{}", stdout(&o));
    }
}

fn at_time<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Output {
    cli(args)
        .env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string())
        .output()
        .unwrap()
}

const DAY: u64 = 86_400_000;

#[test]
fn a_vote_lapses_with_its_own_ttl_and_bounds_the_approval_it_is_counted_into() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, _) = q.submit(&strs(&channel("payments", "pay")));
    let o = at_time(T0, &["approve", q.l(), &id, "--by", "dana", "--ttl", "30m"]);
    expect_exit(&o, 0, "dana, for 30 minutes");
    assert!(
        stderr(&o).contains("your approval holds until 2027-01-15T08:30:00.000Z"),
        "{}",
        stderr(&o)
    );

    // Two days later her yes no longer counts, and the draft says so.
    let later = T0 + 2 * DAY;
    let o = at_time(later, &["draft", "show", q.l(), &id, "--json"]);
    let quorum = json_stdout(&o, "draft show")["quorum"].clone();
    assert_eq!(quorum["approved"], 0, "{quorum}");
    assert_eq!(quorum["lapsed"][0]["by"], "dana", "{quorum}");
    let o = at_time(later, &["draft", "show", q.l(), &id]);
    assert!(
        stdout(&o).contains("lapsed at 2027-01-15T08:30:00.000Z"),
        "{}",
        stdout(&o)
    );
    let o = at_time(later, &["approve", q.l(), &id, "--by", "sam"]);
    expect_exit(&o, 0, "sam");
    assert_eq!(
        stdout(&o),
        "",
        "sam's is the first that counts: no approval JSON"
    );
    assert!(stderr(&o).contains("approved 1 of 2"), "{}", stderr(&o));

    // Dana may approve again; the approval ends at sam's limit (12h from his vote),
    // not 12h from hers.
    let o = at_time(
        later + 60 * 60_000,
        &["approve", q.l(), &id, "--by", "dana"],
    );
    expect_exit(&o, 0, "dana again");
    let approval = json_stdout(&o, "approval");
    assert_eq!(approval["approvers"], json!(["sam", "dana"]));
    assert_eq!(
        approval["expiresAt"], "2027-01-17T20:00:00.000Z",
        "{approval}"
    );

    // A short yes bounds a later long one.
    let (id, _) = q.submit(&strs(&channel("payments", "pay-2")));
    expect_exit(
        &at_time(T0, &["approve", q.l(), &id, "--by", "dana", "--ttl", "30m"]),
        0,
        "dana",
    );
    let o = at_time(
        T0 + 10 * 60_000,
        &["approve", q.l(), &id, "--by", "sam", "--ttl", "2d"],
    );
    expect_exit(&o, 0, "sam completes it");
    assert_eq!(
        json_stdout(&o, "approval")["expiresAt"],
        "2027-01-15T08:30:00.000Z"
    );
}

#[test]
fn racing_approvers_are_stamped_after_what_they_counted_and_only_the_last_gets_the_approval() {
    let q = new_queue();
    // Eight at once on an 8-of-N and a 5-of-N draft: most are judged more than once.
    let names = ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"];
    for round in 0..10 {
        let n = if round % 2 == 0 { 8 } else { 5 };
        q.policy(&["--approvals", &n.to_string()]);
        let (id, _) = q.submit(&strs(&channel("payments", &format!("race-{round}"))));
        let start = std::sync::Arc::new(std::sync::Barrier::new(names.len()));
        let handles: Vec<_> = names
            .iter()
            .map(|name| {
                let (ledger, start, id, name) =
                    (q.l().to_owned(), start.clone(), id.clone(), *name);
                std::thread::spawn(move || {
                    // The wall clock: the race is about when each process stamps.
                    let mut cmd = Command::new(bin());
                    cmd.args(["approve", &ledger, &id, "--by", name])
                        .env("NO_COLOR", "1")
                        .env_remove("SEND_ONCE_FIXED_NOW_MS")
                        .env_remove("SEND_ONCE_LEDGER")
                        .env_remove("SEND_ONCE_USER");
                    start.wait();
                    (name, cmd.output().unwrap())
                })
            })
            .collect();
        let outs: Vec<(&str, Output)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let o = run(&["draft", "show", q.l(), &id, "--json"]);
        let shown = json_stdout(&o, "draft show");
        let approval = shown["approval"].clone();
        let approvers: Vec<&str> = approval["approvers"]
            .as_array()
            .unwrap_or_else(|| panic!("round {round}: not approved: {shown}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(approvers.len(), n, "{approval}");
        let last = approvers[n - 1];
        let printed: Vec<&str> = outs
            .iter()
            .filter(|(_, o)| !o.stdout.is_empty())
            .map(|(name, _)| *name)
            .collect();
        assert_eq!(
            printed,
            [last],
            "round {round}: only the last voter gets the JSON"
        );
        let approved_at = approval["approvedAt"].as_str().unwrap();
        for vote in shown["quorum"]["approvers"].as_array().unwrap() {
            let at = vote["at"].as_str().unwrap();
            assert!(
                at <= approved_at,
                "round {round}: vote {vote} after the approval at {approved_at}"
            );
        }
    }
}

#[test]
fn small_ones_policy_on_a_new_ledger_wording_under_three_and_a_resubmits_number() {
    // Q9: setting a policy is a natural first step, so it makes the ledger.
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("new.db").display().to_string();
    let o = run(&["policy", &l, "--approvals", "3", "--by", "ops"]);
    expect_exit(&o, 0, "policy on a new ledger");
    let o = run(&["policy", &l, "--json"]);
    assert_eq!(json_stdout(&o, "policy --json")[0]["approvals"], 3);

    // Q10: under 3-of-N the submitter is not told "a second person".
    let p = dir.path().join("p.json");
    std::fs::write(&p, r#"{"body":"x"}"#).unwrap();
    let p = p.display().to_string();
    let submit = |extra: &[&str]| {
        let mut args = vec![
            "draft",
            "submit",
            &l,
            "--key",
            "k-1",
            "--payload",
            &p,
            "--by",
            "agent",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    expect_exit(&submit(&[]), 0, "submit");
    refused(
        &run(&["approve", &l, "1", "--by", "agent"]),
        "the submitter under 3-of-N",
        &["3 people other than its authors must approve it"],
    );
    expect_exit(&run(&["approve", &l, "1", "--by", "dana"]), 0, "dana");
    refused(
        &run(&["approve", &l, "1", "--by", "dana"]),
        "dana twice under 3-of-N",
        &["so 2 more people must approve it (approved 1 of 3 so far)"],
    );

    // Q11: a resubmission's --approvals below the draft's number is said, not ignored.
    std::fs::write(dir.path().join("p.json"), r#"{"body":"y"}"#).unwrap();
    let o = submit(&["--approvals", "1"]);
    // Below the ledger's policy: refused as before, nothing queued.
    refused(
        &o,
        "--approvals 1 under a 3 policy",
        &["below the ledger's policy"],
    );
    let o = submit(&["--approvals", "4"]);
    expect_exit(&o, 0, "--approvals 4 raises it");
    assert!(
        stderr(&o).contains("it needs 4 distinct approvers"),
        "{}",
        stderr(&o)
    );
    std::fs::write(dir.path().join("p.json"), r#"{"body":"z"}"#).unwrap();
    let o = submit(&["--approvals", "3"]);
    expect_exit(&o, 0, "--approvals 3 on a draft that needs 4");
    assert!(
        stderr(&o).contains("it still needs 4 distinct approvers (--approvals 3 cannot lower"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_dispatched_draft_is_named_by_when_it_was_dispatched_and_who_approved_it() {
    let q = new_queue();
    let (id, _) = q.submit(&strs(&channel("email", "t")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana approves");
    let sent = q.dir().join("sent.txt").display().to_string();
    let o = at_time(
        T0 + 60_000,
        &[
            "dispatch",
            q.l(),
            &id,
            "--",
            "sh",
            "-c",
            &format!("cat >> '{sent}'"),
        ],
    );
    expect_exit(&o, 0, "dispatch");
    let p = q.payload("later.json", "later");
    let o = run(&[
        "draft",
        "edit",
        q.l(),
        &id,
        "--payload",
        &p,
        "--seen-revision",
        "1",
    ]);
    // A decision another one stands against exits 1, as resolve's does (AL9).
    expect_exit(&o, 1, "an edit of a dispatched draft");
    assert!(
        stderr(&o).contains(
            "is dispatched (at 2027-01-15T08:01:00.000Z; approved by dana at 2027-01-15T08:00:00.000Z)"
        ),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "draft",
        "edit",
        q.l(),
        &id,
        "--payload",
        &p,
        "--seen-revision",
        "1",
        "--json",
    ]);
    expect_exit(&o, 1, "the same, --json");
    let problem = json_stdout(&o, "the refusal as JSON");
    assert_eq!(
        (
            problem["error"]["dispatchedAt"].clone(),
            problem["error"]["by"].clone()
        ),
        (json!("2027-01-15T08:01:00.000Z"), json!("dana"))
    );
    let o = run(&["draft", "show", q.l(), &id]);
    assert!(
        stdout(&o).contains(
            "decided   dispatched at 2027-01-15T08:01:00.000Z; approved by dana at 2027-01-15T08:00:00.000Z"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_rerun_submitting_the_same_revision_keeps_its_votes_and_a_changed_one_voids_them() {
    let q = new_queue();
    q.policy(&["--approvals", "2"]);
    let (id, _) = q.submit(&strs(&channel("email", "t")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    let before = snapshot(q.dir());

    // The same payload, facts and submitter: nothing written, dana's vote stands.
    let (again, _) = q.submit(&strs(&channel("email", "t")));
    assert_eq!(again, id);
    assert_eq!(
        snapshot(q.dir()),
        before,
        "an identical resubmission wrote nothing"
    );
    let p = q.payload(
        &format!("p{}.json", strs(&channel("email", "t")).join("_").len()),
        "pay 9",
    );
    let mut args = vec!["draft", "submit", q.l(), "--payload", &p, "--by", "agent"];
    let key = channel("email", "t");
    args.extend(strs(&key));
    let o = run(&args);
    expect_exit(&o, 0, "the same again, as text");
    assert!(
        stderr(&o).contains("unchanged: its revision 1 already has this payload and these facts"),
        "{}",
        stderr(&o)
    );
    args.push("--json");
    let out = json_stdout(&run(&args), "the same again, --json");
    assert_eq!(
        (out["revision"].clone(), out["unchanged"].clone()),
        (json!(1), json!(true))
    );
    assert_eq!(q.approved(&id)["approved"], 1);

    // Another submitter of the same text is a new revision: who wrote what is kept. It
    // names the revision it builds on, which is not its own.
    let mut other = args.clone();
    other[6] = "agent-2";
    let mut building = other.clone();
    building.extend(["--base-revision", "1"]);
    let out = json_stdout(&run(&building), "the same from agent-2");
    assert_eq!(out["revision"], 2);
    assert_eq!(out["voided"], json!(["dana"]));

    // The Nth approval after an identical rerun completes the quorum.
    expect_exit(&q.approve(&id, "dana"), 0, "dana on revision 2");
    let out = json_stdout(&run(&other), "agent-2 again");
    assert_eq!(out["unchanged"], true);
    let o = q.approve(&id, "sam");
    expect_exit(&o, 0, "sam completes it");
    assert_eq!(
        json_stdout(&o, "approval")["approvers"],
        json!(["dana", "sam"])
    );
}

#[test]
fn the_log_says_what_a_policy_and_a_vote_changed_and_who_has_approved_so_far() {
    let q = new_queue();
    q.policy(&["--approvals", "2", "--channel", "payments"]);
    let o = run(&[
        "policy",
        q.l(),
        "--approvals",
        "2",
        "--channel",
        "payments",
        "--by",
        "ops",
    ]);
    expect_exit(&o, 0, "the same policy again");
    assert!(
        stderr(&o).contains("the policy was already this; nothing changed"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "policy",
        q.l(),
        "--approvals",
        "1",
        "--channel",
        "payments",
        "--allow-self-approval",
        "--by",
        "agent",
        "--json",
    ]);
    let set = json_stdout(&o, "policy --json");
    assert_eq!(
        (set["changed"].clone(), set["before"]["approvals"].clone()),
        (json!(true), json!(2))
    );
    q.policy(&["--approvals", "2", "--channel", "payments"]);

    let (id, _) = q.submit(&strs(&channel("payments", "refund")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    let list = stdout(&run(&["approvals", q.l()]));
    assert!(
        list.contains("approved so far by dana; 1 more needed"),
        "{list}"
    );

    let log = stdout(&run(&["decisions", q.l()]));
    for line in [
        "policy by ops: changed (channel payments: 2 approvals, was not set)",
        "policy by ops: unchanged (channel payments: 2 approvals)",
        "policy by agent: changed (channel payments: 2 -> 1 approval, self-approval now allowed)",
        "policy by ops: changed (channel payments: 1 -> 2 approvals, self-approval no longer allowed)",
        "approve by dana: changed (approval 1 of 2)",
    ] {
        assert!(log.contains(line), "{line:?} not in\n{log}");
    }
    let show = stdout(&run(&["draft", "show", q.l(), &id]));
    assert!(
        show.contains("approve by dana: changed (approval 1 of 2)"),
        "{show}"
    );

    // A new revision: dispatch says where the new one stands.
    expect_exit(&q.approve(&id, "sam"), 0, "sam completes revision 1");
    let p = q.payload("r2.json", "pay 10");
    let mut args = vec!["draft", "submit", q.l(), "--payload", &p, "--by", "agent"];
    let key = channel("payments", "refund");
    args.extend(strs(&key));
    expect_exit(&run(&args), 0, "revision 2");
    expect_exit(&q.approve(&id, "dana"), 0, "dana on revision 2");
    let o = run(&["dispatch", q.l(), &id, "--", "true"]);
    refused(
        &o,
        "dispatch of a revised draft",
        &[
            "payload of draft",
            "; revision 2 has approved 1 of 2 (dana)",
        ],
    );
    let log = stdout(&run(&["decisions", q.l()]));
    assert!(
        log.contains("approve by sam: changed (approval 2 of 2: approved by dana, sam)"),
        "{log}"
    );
}

#[test]
fn a_vote_put_in_by_hand_breaks_decisions_verify_and_names_the_row() {
    let q = new_queue();
    q.policy(&["--approvals", "3"]);
    let (id, _) = q.submit(&strs(&channel("email", "t")));
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    expect_exit(&run(&["decisions", "verify", q.l()]), 0, "verify before");

    let conn = rusqlite::Connection::open(q.l()).unwrap();
    // A row under another spelling of dana's name is one person with her (T4).
    conn.execute(
        "INSERT INTO send_once_votes SELECT draft_id, revision, round, 'DANA', at, version + 10, decision_hash, expires_at FROM send_once_votes",
        [],
    )
    .unwrap();
    let show = json_stdout(&run(&["draft", "show", q.l(), &id, "--json"]), "show");
    assert_eq!(show["quorum"]["approved"], 1, "{}", show["quorum"]);
    conn.execute("DROP TRIGGER IF EXISTS send_once_votes_no_delete", [])
        .unwrap();
    conn.execute("DELETE FROM send_once_votes WHERE approver = 'DANA'", [])
        .unwrap();
    let (hash, version): (String, i64) = conn
        .query_row(
            "SELECT decision_hash, (SELECT version FROM send_once_drafts WHERE id = 1) FROM send_once_votes",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn.execute(
        "INSERT INTO send_once_votes VALUES (1, 1, 1, ?1, '2027-01-15T08:00:00.000Z', ?2, NULL, NULL)",
        rusqlite::params!["mallory\u{1b}[31m", version + 1],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO send_once_votes VALUES (1, 1, 1, 'eve', '2027-01-15T08:00:00.000Z', ?1, ?2, NULL)",
        rusqlite::params![version + 2, hash],
    )
    .unwrap();
    drop(conn);

    let o = run(&["decisions", "verify", q.l()]);
    expect_exit(&o, 1, "verify after two hand-made votes");
    let text = stdout(&o);
    assert!(
        text.starts_with("chain BROKEN: 2 review-queue rows name no decision in the log"),
        "{text}"
    );
    assert!(text.contains("the vote by mallory"), "{text}");
    assert!(
        text.contains("on draft 1 (revision 1) names no decision"),
        "{text}"
    );
    assert!(
        text.contains(
            "the vote by eve on draft 1 (revision 1) names a decision about something else"
        ),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "a raw escape reached the terminal: {text:?}"
    );
    let out = json_stdout(
        &run(&["decisions", "verify", q.l(), "--json"]),
        "verify --json",
    );
    assert_eq!(out["intact"], false);
    assert_eq!(out["unlogged"][1]["vote"]["approver"], "eve");
    let _ = id;
}

/// Findings U1 (a draft decided by hand, with no decision, is named by verify), U2
/// (hand-edited numbers never lower the bar, and never break the list), U4 (a rerun
/// under another spelling of the submitter keeps the votes), U5 (a complete quorum is
/// said so to its author), U9 (punctuation does not make a new person; a name is at
/// most 100 characters).
#[test]
fn hand_edits_never_lower_the_bar_and_a_hand_decided_draft_breaks_verify() {
    let q = new_queue();
    q.policy(&["--approvals", "2", "--channel", "payments"]);
    let (id, _) = q.submit(&strs(&channel("payments", "refund")));

    // U4: ` agent ` and `Agent` rerunning agent's job change nothing.
    expect_exit(&q.approve(&id, "dana"), 0, "dana");
    let p = q.payload(
        &format!(
            "p{}.json",
            strs(&channel("payments", "refund")).join("_").len()
        ),
        "pay 9",
    );
    for by in [" agent ", "Agent"] {
        let mut args = vec![
            "draft",
            "submit",
            q.l(),
            "--payload",
            &p,
            "--by",
            by,
            "--json",
        ];
        let key = channel("payments", "refund");
        args.extend(strs(&key));
        let out = json_stdout(&run(&args), "rerun");
        assert_eq!(out["unchanged"], true, "{by:?}: {out}");
    }
    assert_eq!(q.approved(&id)["approved"], 1);

    // U9: punctuation folds, and a name has a length.
    for name in ["agent.", "agent_", "a-gent"] {
        refused(&q.approve(&id, name), name, &["the same name as agent"]);
    }
    let long = "d".repeat(101);
    refused(
        &q.approve(&id, &long),
        "a 101-character name",
        &["longer than 100 characters"],
    );

    // U5: once complete, the author is told it is approved, not that more are needed.
    expect_exit(&q.approve(&id, "sam"), 0, "sam completes it");
    refused(
        &q.approve(&id, "agent"),
        "the author after",
        &["it is already approved 2 of 2"],
    );

    // U2: numbers edited by hand are read as the strictest.
    let conn = rusqlite::Connection::open(q.l()).unwrap();
    conn.execute(
        "UPDATE send_once_policy SET approvals = -3, self_approval = 7",
        [],
    )
    .unwrap();
    drop(conn);
    let shown = json_stdout(&run(&["policy", q.l(), "--json"]), "policy");
    assert_eq!(
        (
            shown[0]["approvals"].clone(),
            shown[0]["selfApproval"].clone()
        ),
        (json!(10), json!(false)),
        "{shown}"
    );
    let (other, required) = q.submit(&strs(&channel("payments", "other")));
    assert_eq!(required, 10);
    refused(
        &q.approve(&other, "agent"),
        "the author under a damaged policy",
        &["submitted revision 1", "10 people other than its authors"],
    );
    let conn = rusqlite::Connection::open(q.l()).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET approvals_required = 'abc' WHERE id = ?1",
        [other.parse::<i64>().unwrap()],
    )
    .unwrap();
    drop(conn);
    let list = run(&["approvals", q.l(), "--json"]);
    expect_exit(&list, 0, "approvals with a damaged row");
    assert_eq!(q.approved(&other)["required"], 10);
    // The log knows the number it was submitted with.
    let o = run(&["decisions", "verify", q.l()]);
    expect_exit(&o, 1, "verify after the draft's number was edited");
    assert!(
        stdout(&o).contains(&format!(
            "draft {other}'s number of approvers is not a whole number, and it was submitted needing 10"
        )),
        "{}",
        stdout(&o)
    );
    let conn = rusqlite::Connection::open(q.l()).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET approvals_required = 10 WHERE id = ?1",
        [other.parse::<i64>().unwrap()],
    )
    .unwrap();
    drop(conn);

    // H7: and verify names the edited policy row.
    let o = run(&["decisions", "verify", q.l()]);
    expect_exit(&o, 1, "verify after the policy was edited");
    assert!(
        stdout(&o).contains("the policy for channel payments reads -3 approvals"),
        "{}",
        stdout(&o)
    );
    let conn = rusqlite::Connection::open(q.l()).unwrap();
    conn.execute(
        "UPDATE send_once_policy SET approvals = 2, self_approval = 0",
        [],
    )
    .unwrap();
    drop(conn);

    // U1: a draft put in the approved state by hand names no decision.
    expect_exit(&run(&["decisions", "verify", q.l()]), 0, "verify before");
    let conn = rusqlite::Connection::open(q.l()).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET state = 'approved', decided_by = 'erin, sam', decided_at = '2027-01-15T09:00:00.000Z', decision_hash = NULL WHERE id = ?1",
        [other.parse::<i64>().unwrap()],
    )
    .unwrap();
    drop(conn);
    let o = run(&["decisions", "verify", q.l()]);
    expect_exit(&o, 1, "verify after a hand-made approval");
    assert!(
        stdout(&o).contains(&format!(
            "draft {other} was decided at 2027-01-15T09:00:00.000Z, after the chain began, but names no decision"
        )),
        "{}",
        stdout(&o)
    );
}

/// A draft row set to approved by hand, short of the approvers its policy asks, is not
/// dispatched: approved is what the votes say, not what the row says (H7).
#[test]
fn a_draft_set_to_approved_by_hand_short_of_its_approvers_is_not_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db");
    let l = ledger.to_str().unwrap();
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"ana@example.com","amount":10}"#).unwrap();
    expect_exit(
        &run(&["policy", l, "--approvals", "2", "--by", "ops"]),
        0,
        "policy",
    );
    let o = run(&[
        "draft",
        "submit",
        l,
        "--key",
        "k",
        "--payload",
        payload.to_str().unwrap(),
        "--by",
        "agent",
    ]);
    expect_exit(&o, 0, "submit");
    let id = stdout(&o).trim().to_owned();
    expect_exit(
        &run(&["approve", l, &id, "--by", "dana"]),
        0,
        "dana: 1 of 2",
    );
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET state = 'approved' WHERE id = ?1",
        [id.parse::<i64>().unwrap()],
    )
    .unwrap();
    drop(conn);
    let side = dir.path().join("side");
    let send = format!("cat >> '{}'; echo '{{\"id\":\"m\"}}'", side.display());
    let o = run(&["dispatch", l, &id, "--", "sh", "-c", &send]);
    expect_exit(&o, 2, "a hand-made approval short of its approvers");
    assert!(stderr(&o).contains("is not approved"), "{}", stderr(&o));
    assert!(!side.exists(), "sent on one approval of two");
}

/// R4 and R5 of the third retest: a draft row made approved by hand, citing a vote
/// short of its quorum, and an approved draft whose revision's payload and approval
/// hash were swapped by hand, are not dispatched (no approve decision made the
/// approval the row holds), and `decisions verify` names each row.
#[test]
fn an_approval_no_decision_made_is_not_dispatched_and_verify_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db");
    let l = ledger.to_str().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let small = write("small.json", r#"{"to":"ana@example.com","amount":10}"#);
    let big = write("big.json", r#"{"to":"ana@example.com","amount":10000}"#);
    let hash_of = |path: &str| stdout(&run(&["hash", path])).trim().to_owned();
    let submit = |key: &str| {
        let o = run(&[
            "draft",
            "submit",
            l,
            "--key",
            key,
            "--payload",
            &small,
            "--by",
            "agent",
        ]);
        expect_exit(&o, 0, "submit");
        stdout(&o).trim().to_owned()
    };
    let side = dir.path().join("side");
    let send = format!("cat >> '{}'; echo '{{\"id\":\"m\"}}'", side.display());
    let sql = |statement: &str| {
        let conn = rusqlite::Connection::open(&ledger).unwrap();
        conn.execute_batch(
            "DROP TRIGGER IF EXISTS send_once_revisions_no_update;
             DROP TRIGGER IF EXISTS send_once_revisions_no_delete;",
        )
        .unwrap();
        conn.execute_batch(statement).unwrap();
    };

    // R5 first, on one approver: dana approves {"amount":10}; by hand the revision
    // becomes {"amount":10000} and the approval's hash follows it.
    let one = submit("refund-1");
    expect_exit(
        &run(&["approve", l, &one, "--by", "dana"]),
        0,
        "dana approves",
    );
    let (h_small, h_big) = (hash_of(&small), hash_of(&big));
    sql(&format!(
        "UPDATE send_once_revisions SET payload = '{{\"to\":\"ana@example.com\",\"amount\":10000}}', payload_hash = '{h_big}' WHERE draft_id = {one};
         UPDATE send_once_drafts SET approval = replace(approval, '{h_small}', '{h_big}') WHERE id = {one};"
    ));
    let o = run(&["dispatch", l, &one, "--", "sh", "-c", &send]);
    expect_exit(&o, 2, "an approval whose payload hash was swapped");
    assert!(
        stderr(&o).contains("no approve decision in the log made the approval its row holds"),
        "{}",
        stderr(&o)
    );
    assert!(!side.exists(), "sent what nobody approved");
    let o = run(&["decisions", "verify", l]);
    expect_exit(&o, 1, "verify after the swap");
    assert!(
        stdout(&o).contains(&format!(
            "draft {one}'s row is approved, but the decision it names"
        )),
        "{}",
        stdout(&o)
    );

    // R4: two approvers; dana's vote (1 of 2); the row set approved by hand, citing
    // her vote, its number lowered to one.
    let dir2 = tempfile::tempdir().unwrap();
    let ledger2 = dir2.path().join("q.db");
    let l2 = ledger2.to_str().unwrap();
    expect_exit(
        &run(&["policy", l2, "--approvals", "2", "--by", "ops"]),
        0,
        "policy",
    );
    let o = run(&[
        "draft",
        "submit",
        l2,
        "--key",
        "refund-2",
        "--payload",
        &small,
        "--by",
        "agent",
    ]);
    expect_exit(&o, 0, "submit");
    let two = stdout(&o).trim().to_owned();
    expect_exit(
        &run(&["approve", l2, &two, "--by", "dana"]),
        0,
        "dana: 1 of 2",
    );
    let o = run(&["decisions", l2, "--json"]);
    let vote = json_stdout(&o, "decisions")
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["action"] == "approve")
        .cloned()
        .unwrap();
    let approval = json!({
        "payloadHash": h_small, "approvedAt": vote["at"], "expiresAt": "2099-01-01T00:00:00.000Z",
        "approvedBy": "dana", "facts": {},
    });
    let conn = rusqlite::Connection::open(&ledger2).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET state = 'approved', approval = ?1, approved_revision = 1, \
         decided_by = 'dana', decided_at = ?2, decision_hash = ?3, approvals_required = 1 WHERE id = ?4",
        rusqlite::params![
            approval.to_string(),
            vote["at"].as_str().unwrap(),
            vote["hash"].as_str().unwrap(),
            two.parse::<i64>().unwrap()
        ],
    )
    .unwrap();
    drop(conn);
    let o = run(&["dispatch", l2, &two, "--", "sh", "-c", &send]);
    expect_exit(&o, 2, "a hand-made approval citing a vote");
    assert!(
        stderr(&o).contains("no approve decision in the log made the approval"),
        "{}",
        stderr(&o)
    );
    assert!(!side.exists(), "sent on one approval of two");
    let o = run(&["decisions", "verify", l2]);
    expect_exit(&o, 1, "verify after the flip");
    assert!(
        stdout(&o).contains(&format!(
            "draft {two}'s row is approved, but the decision it names"
        )) && stdout(&o).contains("approval 1 of 2")
            && stdout(&o).contains("did not put it there"),
        "{}",
        stdout(&o)
    );
}

/// N2 of the fourth retest: a draft row edited by hand does not send through the other
/// doors either. Rejected by sam and set back to approved: dispatch refuses it, naming
/// sam. Set to approved with a hand-written approval: `dispatch KEY --approval` refuses
/// it. Set to dispatched: `run` of its key refuses it.
#[test]
fn a_draft_row_edited_by_hand_does_not_send_through_any_door() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db");
    let l = ledger.to_str().unwrap();
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"ana@example.com","amount":10}"#).unwrap();
    let p = payload.to_str().unwrap();
    let side = dir.path().join("side");
    let send = format!("cat >> '{}'; echo '{{\"id\":\"m\"}}'", side.display());
    let submit = |key: &str| {
        let o = run(&[
            "draft",
            "submit",
            l,
            "--key",
            key,
            "--payload",
            p,
            "--by",
            "agent",
        ]);
        expect_exit(&o, 0, "submit");
        stdout(&o).trim().to_owned()
    };
    let sql = |statement: &str| {
        let conn = rusqlite::Connection::open(&ledger).unwrap();
        conn.execute_batch(statement).unwrap();
    };

    // (b) Approved by dana, rejected by sam, set back to approved by hand.
    let b = submit("refund-b");
    expect_exit(
        &run(&["approve", l, &b, "--by", "dana"]),
        0,
        "dana approves",
    );
    let approval =
        json_stdout(&run(&["draft", "show", l, &b, "--json"]), "show")["approval"].clone();
    expect_exit(
        &run(&[
            "reject",
            l,
            &b,
            "--by",
            "sam",
            "--reason",
            "fraud, do not send",
        ]),
        0,
        "sam rejects",
    );
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    conn.execute(
        "UPDATE send_once_drafts SET state = 'approved', approval = ?1 WHERE id = ?2",
        rusqlite::params![approval.to_string(), b.parse::<i64>().unwrap()],
    )
    .unwrap();
    drop(conn);
    let o = run(&["dispatch", l, &b, "--", "sh", "-c", &send]);
    expect_exit(&o, 2, "a rejected draft set back by hand");
    assert!(stderr(&o).contains("rejected by sam"), "{}", stderr(&o));

    // (a) Two approvers asked, none given; approved by hand, with a hand-made approval.
    expect_exit(
        &run(&["policy", l, "--approvals", "2", "--by", "ops"]),
        0,
        "policy",
    );
    let a = submit("refund-a");
    let hash = stdout(&run(&["hash", p])).trim().to_owned();
    let hand = json!({
        "payloadHash": hash, "approvedAt": "2026-12-01T00:00:00.000Z",
        "expiresAt": "2099-01-01T00:00:00.000Z", "approvedBy": "nobody", "facts": {},
    });
    sql(&format!(
        "UPDATE send_once_drafts SET state = 'approved', approval = '{hand}' WHERE id = {a}"
    ));
    let hand_file = dir.path().join("hand.json");
    std::fs::write(&hand_file, hand.to_string()).unwrap();
    let o = run(&[
        "dispatch",
        l,
        "refund-a",
        "--approval",
        hand_file.to_str().unwrap(),
        "--payload",
        p,
        "--",
        "sh",
        "-c",
        &send,
    ]);
    expect_exit(&o, 2, "an outside approval of a draft approved by hand");
    assert!(
        stderr(&o).contains("is approved by its row, but no approve decision"),
        "{}",
        stderr(&o)
    );

    // ... and with no approval in its row at all (M1).
    let a2 = submit("refund-a2");
    sql(&format!(
        "UPDATE send_once_drafts SET state = 'approved', approval = NULL WHERE id = {a2}"
    ));
    let o = run(&[
        "dispatch",
        l,
        "refund-a2",
        "--approval",
        hand_file.to_str().unwrap(),
        "--payload",
        p,
        "--",
        "sh",
        "-c",
        &send,
    ]);
    expect_exit(
        &o,
        2,
        "an outside approval of a row approved with no approval",
    );
    assert!(
        stderr(&o).contains("it holds no approval"),
        "{}",
        stderr(&o)
    );
    let o = run(&["decisions", "verify", l]);
    expect_exit(&o, 1, "verify of rows approved by hand");
    assert!(
        stdout(&o).contains(&format!(
            "draft {a2} is approved, but names no decision and no time it was decided"
        )),
        "{}",
        stdout(&o)
    );

    // (c) Set to dispatched by hand: run does not take that as sent.
    let c = submit("refund-c");
    sql(&format!(
        "UPDATE send_once_drafts SET state = 'dispatched' WHERE id = {c}"
    ));
    let o = run(&["run", l, "--key", "refund-c", "--", "sh", "-c", &send]);
    expect_exit(
        &o,
        2,
        "run of a key whose draft was set to dispatched by hand",
    );
    assert!(
        stderr(&o).contains("the ledger no longer has its key"),
        "{}",
        stderr(&o)
    );
    assert!(!side.exists(), "sent through a door");
}
