//! N-of-M approval in the TUI's state machine and drawing, without a terminal: the
//! badge and the detail say how far a draft got and who approved, the approval form
//! says what this approval makes, what the store would refuse (the revision's author,
//! a second vote by one person, an approval already complete) is said before a form
//! opens, and a vote short of the number is worded as one. The screen end to end is
//! in tests/tui/quorum.rs.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use send_once::ledger::time;
use send_once::review::{Draft, Quorum, Revision, Vote};
use send_once::ui::action::{Action, Effect, Outcome};
use send_once::ui::app::{App, Options, Overlay};
use send_once::ui::forms::{FormKind, QuorumShown};
use send_once::ui::theme::Theme;
use send_once::ui::view;

use crate::harness;
use crate::harness::clock::{MIN, ago, now};
use harness::queued_draft;

/// Draft 7 by agent, needing two approvers, with `votes` on its revision 1.
fn draft(votes: &[&str]) -> Draft {
    let mut d = queued_draft(7, "invoice-7", ago(30 * MIN));
    d.submitted_by = Some("agent".into());
    d.meta = Some(
        serde_json::json!({"to": "ana@example.com", "intent": "invoice-due"})
            .as_object()
            .unwrap()
            .clone(),
    );
    d.revisions = vec![Revision {
        revision: 1,
        payload: r#"{"to":"ana@example.com","body":"Invoice 7 is due."}"#.into(),
        payload_hash: "h1".into(),
        facts: Default::default(),
        submitted_at: ago(30 * MIN),
        submitted_by: Some("agent".into()),
    }];
    d.quorum = Quorum {
        required: 2,
        self_approval: false,
        votes: votes
            .iter()
            .enumerate()
            .map(|(i, by)| Vote {
                revision: 1,
                round: 1,
                by: (*by).into(),
                at: ago(10 * MIN),
                version: 2 + i as i64,
                expires_at: None,
            })
            .collect(),
    };
    d.version = 1 + votes.len() as i64;
    d
}

fn app_as(by: &str, drafts: Vec<Draft>) -> App {
    let mut app = App::new(Options {
        ledger_label: "ledger.db".into(),
        by: by.into(),
        older_than_ms: 5 * MIN,
        no_queue: None,
        now: now(),
    });
    app.update(Action::ApprovalsLoaded(Ok(drafts)));
    app.update(Action::UnknownLoaded(Ok(Vec::new())));
    app
}

/// This screen's vote on draft 7's revision 1, answered as recorded: 1 of 2.
fn vote_recorded(app: &mut App) {
    app.update(Action::Done(Outcome::Voted {
        id: 7,
        revision: 1,
        so_far: "approved 1 of 2".into(),
        missing: 1,
    }));
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn screen(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
    terminal
        .draw(|frame| view::draw(frame, app, &Theme::new(true)))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_badge_and_the_detail_say_how_far_it_got_and_who_approved() {
    let app = app_as("dana", vec![draft(&["sam"])]);
    let shown = screen(&app);
    assert!(shown.contains("[approved 1 of 2]"), "{shown}");
    assert!(
        shown.contains("approved 1 of 2 of revision 1 (sam at")
            && shown.contains(&format!("{}); one more needed", ago(10 * MIN))),
        "{shown}"
    );
    let none = screen(&app_as("dana", vec![draft(&[])]));
    // Nobody yet: it needs two, which must not read as "approved".
    assert!(none.contains("[needs 2]"), "{none}");
}

#[test]
fn the_form_says_what_this_approval_makes() {
    let mut app = app_as("dana", vec![draft(&["sam"])]);
    assert_eq!(press(&mut app, KeyCode::Char('a')), vec![]);
    let Some(Overlay::Form(form)) = &app.overlay else {
        panic!("no form: {}", status(&app));
    };
    let FormKind::Approve { quorum, .. } = &form.kind else {
        panic!("not the approve form: {:?}", form.kind);
    };
    assert_eq!(
        quorum,
        &Some(QuorumShown {
            approved: 1,
            required: 2,
            approvers: "sam".into(),
            earliest: None,
            shown_at: now(),
        })
    );
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation");
    };
    assert!(
        confirm.lines.contains(
            &"Your approval makes 2 of 2 (after sam): the approval is made now, and its 12h run from now."
                .to_owned()
        ),
        "{:?}",
        confirm.lines
    );
    let effects = press(&mut app, KeyCode::Char('y'));
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Approve {
                id: 7,
                version: 2,
                ..
            }
        )),
        "{effects:?}"
    );

    let mut first = app_as("dana", vec![draft(&[])]);
    press(&mut first, KeyCode::Char('a'));
    press(&mut first, KeyCode::Enter);
    let Some(Overlay::Confirm(confirm)) = &first.overlay else {
        panic!("no confirmation");
    };
    assert!(
        confirm.lines.contains(
            &"Your approval makes 1 of 2: one more needed before it can be sent.".to_owned()
        ),
        "{:?}",
        confirm.lines
    );
}

#[test]
fn what_the_store_would_refuse_is_said_before_a_form_opens() {
    let mut app = app_as("agent", vec![draft(&[])]);
    press(&mut app, KeyCode::Char('a'));
    assert!(app.overlay.is_none());
    assert_eq!(
        status(&app),
        "agent wrote revision 1 of draft 7; 2 more people must approve it."
    );
    let mut app = app_as("sam", vec![draft(&["sam"])]);
    press(&mut app, KeyCode::Char('a'));
    assert!(app.overlay.is_none());
    assert_eq!(
        status(&app),
        "You (sam) already approved revision 1 (approved 1 of 2); one more person must approve it."
    );
}

#[test]
fn a_vote_short_of_the_number_is_worded_as_one() {
    let mut app = app_as("dana", vec![draft(&[])]);
    vote_recorded(&mut app);
    assert_eq!(
        status(&app),
        "Your approval of draft 7 (revision 1) is recorded: approved 1 of 2; one more person must approve it before it can be sent."
    );
}

/// AD11: the agent submits a new revision while the status line still says this
/// screen's vote counts. The vote covers revision 1 only, and the line says so once
/// the queue shows revision 2; a reload that changes nothing leaves the line alone.
#[test]
fn a_vote_voided_by_a_new_revision_is_said_to_no_longer_count() {
    let mut app = app_as("dana", vec![draft(&[])]);
    vote_recorded(&mut app);
    let voted = status(&app);
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(&["dana"])])));
    assert_eq!(
        status(&app),
        voted,
        "the same revision: the vote still counts"
    );
    let mut revised = draft(&[]);
    revised.revision = 2;
    revised.version = 4;
    revised.revisions.push(Revision {
        revision: 2,
        payload: r#"{"to":"ana@example.com","body":"Invoice 7 is overdue."}"#.into(),
        payload_hash: "h2".into(),
        facts: Default::default(),
        submitted_at: ago(MIN),
        submitted_by: Some("billing-agent".into()),
    });
    app.update(Action::ApprovalsLoaded(Ok(vec![revised.clone()])));
    assert_eq!(
        status(&app),
        "Draft 7 has a new revision 2 by billing-agent: your approval of revision 1 no longer counts, and it needs approval again."
    );
    // Said once: the next reload does not say it again over what came since.
    app.update(Action::ApprovalsLoaded(Ok(vec![revised])));
    assert!(status(&app).starts_with("Draft 7 has a new revision 2"));

    // AJ5: rejected by someone else while the line says the vote counts.
    let mut app = app_as("dana", vec![draft(&[])]);
    vote_recorded(&mut app);
    app.update(Action::ApprovalsLoaded(Ok(Vec::new())));
    assert_eq!(
        status(&app),
        "Draft 7 has left the queue since your approval: someone else rejected, withdrew or dispatched it (view 4 says who)."
    );
}

/// Finding T3: the confirmation names the limit the approval gets when an earlier
/// vote's runs out first, and a partial vote says how long it holds.
#[test]
fn the_confirmation_names_an_earlier_voters_limit() {
    let mut d = draft(&["sam"]);
    let until = time::iso_from_millis(now() + 10 * MIN).unwrap();
    d.quorum.votes[0].expires_at = Some(until.clone());
    let mut app = app_as("dana", vec![d]);
    let shown = screen(&app);
    assert!(
        shown.contains("holds until") && shown.contains(&until),
        "{shown}"
    );
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {}", status(&app));
    };
    let line = format!(
        "Your approval makes 2 of 2 (after sam): the approval is made now, and expires at {until} (sam's limit, in 10m), before your 12h."
    );
    assert!(confirm.lines.contains(&line), "{:?}", confirm.lines);
}

/// Findings T8 and T6: the vote that completes a quorum is told so, with everyone
/// it counts, and how the draft gets sent (N9); an edit that voided votes says whose.
#[test]
fn the_completing_vote_and_a_voiding_edit_say_so() {
    let mut app = app_as("dana", vec![draft(&["sam"])]);
    app.update(Action::Done(Outcome::Approved {
        id: 7,
        revision: 1,
        expires_at: "2026-09-28T00:00:00.000Z".into(),
        approvers: Some(("sam, dana".into(), 2)),
    }));
    assert_eq!(
        status(&app),
        "Approved draft 7 (revision 1) 2 of 2, by sam, dana: the approval is made, until 2026-09-28T00:00:00.000Z. Send it with: send-once dispatch ledger.db 7 -- <send command>"
    );
    app.update(Action::Done(Outcome::Edited {
        id: 7,
        revision: 2,
        by: "dana".into(),
        was_approved: false,
        voided: vec!["sam".into()],
    }));
    assert_eq!(
        status(&app),
        "Draft 7 edited; revision 2 by dana: needs approval; voided 1 approval (sam) of revision 1."
    );
}

/// Finding U6: a name the store would refuse is refused in the form, on Enter,
/// and the form is kept to be corrected.
/// A call the MCP proxy held is made by the proxy alone (`dispatch` refuses it): its
/// approval does not tell the person to dispatch it (shift AD12).
#[test]
fn an_approved_call_the_proxy_held_is_said_to_be_made_by_the_proxy() {
    let mut held = draft(&["sam"]);
    held.meta = Some(
        serde_json::json!({"heldBy": "send-once mcp proxy", "upstream": "bank", "tool": "wire"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let mut app = app_as("dana", vec![held]);
    app.update(Action::Done(Outcome::Approved {
        id: 7,
        revision: 1,
        expires_at: "2026-09-28T00:00:00.000Z".into(),
        approvers: Some(("sam, dana".into(), 2)),
    }));
    let said = status(&app);
    assert!(
        said.contains("held by send-once mcp proxy") && !said.contains("send-once dispatch"),
        "{said}"
    );
}

#[test]
fn a_name_with_a_comma_is_refused_in_the_form_which_is_kept() {
    let mut app = app_as("dana", vec![draft(&["sam"])]);
    press(&mut app, KeyCode::Char('a'));
    let Some(Overlay::Form(form)) = &mut app.overlay else {
        panic!("no form: {}", status(&app));
    };
    let name = form
        .fields
        .iter_mut()
        .find(|f| f.label == "Name")
        .expect("a Name field");
    name.input = "sam, erin".into();
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let Some(Overlay::Form(form)) = &app.overlay else {
        panic!("the form is gone: {}", status(&app));
    };
    assert!(
        form.error
            .as_deref()
            .is_some_and(|e| e.contains("holds a comma")),
        "{:?}",
        form.error
    );
}

/// An approval under another name than the screen's is said to be that person's
/// vote, and only `y` confirms it: one person at one screen could otherwise make a
/// two-person approval alone by typing a second name (operator's shift, session 43:
/// AJ3).
#[test]
fn an_approval_under_another_name_is_said_to_be_their_vote() {
    let mut app = app_as("dana", vec![draft(&[])]);
    press(&mut app, KeyCode::Char('a'));
    let Some(Overlay::Form(form)) = &app.overlay else {
        panic!("no form: {}", status(&app));
    };
    let name = form.fields.iter().position(|f| f.label == "Name").unwrap();
    while !matches!(&app.overlay, Some(Overlay::Form(f)) if f.focus == name) {
        press(&mut app, KeyCode::Tab);
    }
    for _ in 0.."dana".len() {
        press(&mut app, KeyCode::Backspace);
    }
    for c in "zed".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    press(&mut app, KeyCode::Enter);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {}", status(&app));
    };
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.contains("opened as dana: this approval is recorded as zed's vote"),
        "{warning}"
    );
    // Under the screen's own name, nothing is said.
    let mut app = app_as("dana", vec![draft(&[])]);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {}", status(&app));
    };
    assert_eq!(confirm.warnings(), None);
}

/// An approval's confirmation open while another person votes says what the draft is
/// now, and only `y` confirms: it was a picture of the draft as it was, and "makes 1
/// of 2" became 2 of 2 on `y` (operator's shift, session 43: AJ2).
#[test]
fn a_confirmation_open_while_the_draft_changes_says_what_it_is_now() {
    let mut app = app_as("dana", vec![draft(&[])]);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    assert!(matches!(&app.overlay, Some(Overlay::Confirm(c)) if c.warnings().is_none()));
    // The same draft again: nothing is said.
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(&[])])));
    assert!(matches!(&app.overlay, Some(Overlay::Confirm(c)) if c.warnings().is_none()));
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(&["erin"])])));
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("the confirmation closed: {}", status(&app));
    };
    assert!(confirm.strict(), "only y confirms");
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.starts_with(
            "Changed while this was open: draft 7 is now revision 1, approved 1 of 2."
        ),
        "{warning}"
    );
    // Said once, however often the queue reloads.
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(&["erin"])])));
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("the confirmation closed");
    };
    assert_eq!(confirm.warnings().unwrap_or_default(), warning);
    // Gone from the queue (withdrawn, rejected, dispatched): said too (AK4).
    app.update(Action::ApprovalsLoaded(Ok(vec![])));
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("the confirmation closed");
    };
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.starts_with("Changed while this was open: draft 7 has left the queue"),
        "{warning}"
    );
}

/// A vote that loads while the approve form is still open is in the confirmation the
/// form turns into: it said "makes 1 of 2" and Enter made the approval complete
/// (operator's shift, session 44: AK1).
#[test]
fn a_vote_loaded_while_the_form_was_open_is_said_in_its_confirmation() {
    let mut app = app_as("dana", vec![draft(&[])]);
    press(&mut app, KeyCode::Char('a'));
    assert!(matches!(&app.overlay, Some(Overlay::Form(_))));
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(&["erin"])])));
    press(&mut app, KeyCode::Enter);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {}", status(&app));
    };
    assert!(confirm.strict(), "only y confirms");
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.contains("draft 7 is now revision 1, approved 1 of 2"),
        "{warning}"
    );
    // And it counts the vote: this approval completes the two.
    assert!(
        confirm
            .lines
            .iter()
            .any(|l| l
                .starts_with("Your approval makes 2 of 2 (after erin): the approval is made now")),
        "{:?}",
        confirm.lines
    );
    // Enter does not confirm it; y does.
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert!(matches!(&app.overlay, Some(Overlay::Confirm(_))));
}
