//! The TUI's state machine without a terminal: actions in, state and effects out.
//! Every irreversible decision must leave `App::update` as exactly one effect carrying
//! what the person saw and typed, and only after a confirmation.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use pretty_assertions::assert_eq;
use send_once::ledger::{Census, Entry, PageQuery, Seen, Status};
use send_once::review::drift::LatestFacts;
use send_once::review::{Draft, Revision};
use send_once::ui::action::{Action, Effect, Outcome};
use send_once::ui::app::{App, FormKind, LEDGER_PAGE, Loaded, Options, Overlay, StillSending};
use send_once::ui::keymap::{self, BINDINGS, View, command_for};
use serde_json::{Map, Value, json};

use crate::harness;
use crate::harness::clock::{MIN, ago, now};
use harness::queued_draft;

fn obj(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn revision(n: i64, payload: Value, facts: Value) -> Revision {
    Revision {
        revision: n,
        payload: payload.to_string(),
        payload_hash: format!("hash-{n}"),
        facts: obj(facts),
        submitted_at: ago(60 * MIN),
        submitted_by: Some("agent".into()),
    }
}

fn draft(id: i64, to: &str) -> Draft {
    let mut d = queued_draft(id, &format!("draft-key-{id}"), ago(60 * MIN));
    d.submitted_by = Some("agent".into());
    d.meta = Some(obj(json!({"to": to, "intent": "reminder"})));
    d.revisions = vec![revision(1, json!({"to": to, "body": "hello"}), json!({}))];
    d
}

fn suspicious_draft(id: i64) -> Draft {
    let mut d = draft(id, "eve@example.com");
    d.revisions = vec![revision(
        1,
        json!({"to": "eve@example.com", "body": "pay \u{1b}[2J now \u{202e}gnp.exe"}),
        json!({}),
    )];
    d
}

fn drifted_draft(id: i64) -> Draft {
    let mut d = draft(id, "bo@example.com");
    d.revisions = vec![revision(
        1,
        json!({"to": "bo@example.com"}),
        json!({"balance": 120}),
    )];
    d.latest = LatestFacts {
        facts: Some(obj(json!({"balance": 0}))),
        checked_at: Some(ago(MIN)),
        error: None,
    };
    d
}

fn entry(key: &str, status: &str, claimed_ms_ago: i64) -> Entry {
    Entry::from_value(json!({
        "key": key,
        "status": status,
        "attempts": 1,
        "claimedAt": ago(claimed_ms_ago),
        "updatedAt": ago(claimed_ms_ago),
        "meta": null,
    }))
    .unwrap()
}

fn new_app() -> App {
    App::new(Options {
        ledger_label: "ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5 * MIN,
        no_queue: None,
        now: now(),
    })
}

/// An app with drafts 1..=n loaded, and a few unknown sends.
fn app_with(drafts: Vec<Draft>) -> App {
    let mut app = new_app();
    assert_eq!(app.update(Action::ApprovalsLoaded(Ok(drafts))), vec![]);
    let unknown = vec![
        entry("order-1:charge", "pending", 90 * MIN),
        entry("order-2:charge", "pending", 30 * MIN),
    ];
    assert_eq!(app.update(Action::UnknownLoaded(Ok(unknown))), vec![]);
    app
}

fn five() -> Vec<Draft> {
    (1..=5)
        .map(|i| draft(i, &format!("p{i}@example.com")))
        .collect()
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn ch(app: &mut App, c: char) -> Vec<Effect> {
    press(app, KeyCode::Char(c))
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        assert_eq!(ch(app, c), vec![], "typing {c:?} must not act");
    }
}

fn reloads(app: &App) -> Vec<Effect> {
    vec![
        Effect::LoadApprovals,
        Effect::LoadUnknown,
        Effect::LoadLedger(app.ledger_query()),
        Effect::LoadCounts,
        Effect::LoadDecisions,
    ]
}

fn selected_id(app: &App) -> Option<i64> {
    app.selected_draft().map(|d| d.id)
}

fn form(app: &App) -> &send_once::ui::app::Form {
    match &app.overlay {
        Some(Overlay::Form(form)) => form,
        other => panic!("expected a form, got {other:?}"),
    }
}

fn confirm(app: &App) -> &send_once::ui::app::Confirm {
    match &app.overlay {
        Some(Overlay::Confirm(confirm)) => confirm,
        other => panic!("expected a confirmation, got {other:?}"),
    }
}

fn field_values(app: &App) -> Vec<(&'static str, String)> {
    form(app)
        .fields
        .iter()
        .map(|f| (f.label, f.input.value().to_owned()))
        .collect()
}

fn status(app: &App) -> (&str, bool) {
    let status = app.status.as_ref().expect("a status line");
    (status.text.as_str(), status.ok)
}

#[test]
fn start_loads_every_view_and_a_jsonl_ledger_skips_the_queue() {
    let app = new_app();
    assert_eq!(app.start(), reloads(&app));
    let jsonl = App::new(Options {
        ledger_label: "ledger.jsonl".into(),
        by: "dana".into(),
        older_than_ms: 300_000,
        no_queue: Some("no queue here".into()),
        now: now(),
    });
    // Asking a JSON Lines ledger for its queue could only fail.
    assert_eq!(
        jsonl.start(),
        vec![
            Effect::LoadUnknown,
            Effect::LoadLedger(jsonl.ledger_query()),
            Effect::LoadCounts,
            Effect::LoadDecisions,
        ]
    );
}

#[test]
fn views_switch_with_digits_tab_and_shift_tab() {
    let mut app = app_with(five());
    assert_eq!(app.view, View::Approvals);
    let steps: &[(KeyCode, View)] = &[
        (KeyCode::Char('2'), View::Unknown),
        (KeyCode::Char('3'), View::Ledger),
        (KeyCode::Char('4'), View::Decisions),
        (KeyCode::Char('1'), View::Approvals),
        (KeyCode::Tab, View::Unknown),
        (KeyCode::Tab, View::Ledger),
        (KeyCode::Tab, View::Decisions),
        (KeyCode::Tab, View::Approvals),
        (KeyCode::BackTab, View::Decisions),
        (KeyCode::BackTab, View::Ledger),
        (KeyCode::BackTab, View::Unknown),
    ];
    for (code, view) in steps {
        assert_eq!(press(&mut app, *code), vec![], "{code:?}");
        assert_eq!(app.view, *view, "after {code:?}");
    }
    // Terminals report Shift-Tab with the shift modifier set.
    app.update(Action::Key(KeyEvent::new(
        KeyCode::BackTab,
        KeyModifiers::SHIFT,
    )));
    assert_eq!(app.view, View::Approvals);
}

#[test]
fn moving_clamps_at_both_ends() {
    let mut app = app_with(five());
    assert_eq!(selected_id(&app), Some(1));
    ch(&mut app, 'k');
    assert_eq!(app.selected(View::Approvals), 0, "k at the top stays");
    ch(&mut app, 'j');
    press(&mut app, KeyCode::Down);
    assert_eq!(selected_id(&app), Some(3));
    for _ in 0..10 {
        ch(&mut app, 'j');
    }
    assert_eq!(selected_id(&app), Some(5), "j at the bottom stays");
    ch(&mut app, 'g');
    assert_eq!(selected_id(&app), Some(1));
    ch(&mut app, 'G');
    assert_eq!(selected_id(&app), Some(5));
    press(&mut app, KeyCode::Up);
    assert_eq!(selected_id(&app), Some(4));

    // A page is what fits in the list: the smallest terminal drawn (18 rows) leaves 6.
    let fifteen = (1..=15)
        .map(|i| draft(i, &format!("p{i}@example.com")))
        .collect();
    app.update(Action::ApprovalsLoaded(Ok(fifteen)));
    assert_eq!(app.update(Action::Resize(100, 18)), vec![]);
    ch(&mut app, 'g');
    assert_eq!(press(&mut app, KeyCode::PageDown), vec![]);
    assert_eq!(selected_id(&app), Some(7));
    press(&mut app, KeyCode::PageDown);
    press(&mut app, KeyCode::PageDown);
    assert_eq!(
        selected_id(&app),
        Some(15),
        "a page down past the end clamps"
    );
    press(&mut app, KeyCode::PageUp);
    assert_eq!(selected_id(&app), Some(9));
    press(&mut app, KeyCode::PageUp);
    press(&mut app, KeyCode::PageUp);
    assert_eq!(selected_id(&app), Some(1));

    // Each view keeps its own selection.
    ch(&mut app, '2');
    ch(&mut app, 'j');
    ch(&mut app, '1');
    assert_eq!(selected_id(&app), Some(1));
    assert_eq!(app.selected(View::Unknown), 1);
}

#[test]
fn moving_in_an_empty_list_is_harmless() {
    let mut app = app_with(vec![]);
    // With nothing to review it opened where the work is; go back to the queue.
    assert_eq!(app.view, View::Unknown);
    ch(&mut app, '1');
    for code in [
        KeyCode::Char('j'),
        KeyCode::Char('G'),
        KeyCode::PageDown,
        KeyCode::Char('k'),
    ] {
        assert_eq!(press(&mut app, code), vec![]);
        assert_eq!(app.selected(View::Approvals), 0);
    }
    // Nothing to decide on: said, not silently ignored.
    ch(&mut app, 'a');
    assert!(app.overlay.is_none());
    assert_eq!(status(&app), ("No draft selected.", false));
}

#[test]
fn filter_applies_as_typed_enter_keeps_it_and_esc_clears_it() {
    let mut app = app_with(five());
    ch(&mut app, 'j');
    assert_eq!(ch(&mut app, '/'), vec![]);
    assert!(app.filter_input.is_some());
    // While typing, letters are text, not commands: "q" must not quit.
    type_text(&mut app, "p4@");
    assert!(!app.quit);
    assert_eq!(
        app.filter(View::Approvals),
        "p4@",
        "the list narrows as it is typed"
    );
    assert_eq!(app.visible_drafts().len(), 1);
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert!(app.filter_input.is_none());
    assert_eq!(app.filter(View::Approvals), "p4@");
    let ids: Vec<i64> = app.visible_drafts().iter().map(|d| d.id).collect();
    assert_eq!(ids, vec![4]);
    assert_eq!(selected_id(&app), Some(4));

    // A filter that is an id finds that draft.
    ch(&mut app, '/');
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    type_text(&mut app, "2");
    press(&mut app, KeyCode::Enter);
    let ids: Vec<i64> = app.visible_drafts().iter().map(|d| d.id).collect();
    assert_eq!(ids, vec![2]);

    ch(&mut app, '/');
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
    assert!(app.filter_input.is_none());
    assert_eq!(app.filter(View::Approvals), "");
    assert_eq!(app.visible_drafts().len(), 5);
}

#[test]
fn esc_clears_an_applied_filter() {
    let mut app = app_with(five());
    ch(&mut app, '/');
    type_text(&mut app, "p3@");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_drafts().len(), 1);
    // No filter is being typed now; Esc still backs out of the narrowed list.
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
    assert_eq!(app.filter(View::Approvals), "");
    assert_eq!(app.visible_drafts().len(), 5);
    // The draft the filter found stays selected once it is cleared: a person's place
    // is not moved to the top row under them (shift, session 41).
    assert_eq!(selected_id(&app), Some(3));

    // In the ledger the search is the store's: clearing it reloads.
    ch(&mut app, '3');
    ch(&mut app, '/');
    for c in "order".chars() {
        ch(&mut app, c);
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        press(&mut app, KeyCode::Esc),
        vec![Effect::LoadLedger(PageQuery {
            status: None,
            search: None,
            offset: 0,
            limit: LEDGER_PAGE,
        })]
    );
    // With nothing to clear, Esc does nothing.
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
}

#[test]
fn filter_text_q_is_typed_not_obeyed() {
    let mut app = app_with(five());
    ch(&mut app, '/');
    assert_eq!(ch(&mut app, 'q'), vec![]);
    assert!(!app.quit);
    assert_eq!(app.filter_input.as_ref().unwrap().value(), "q");
}

#[test]
fn ledger_status_filter_cycles_and_reloads_from_the_first_page() {
    let mut app = app_with(five());
    ch(&mut app, '3');
    let mut seen = Vec::new();
    for _ in 0..4 {
        let effects = ch(&mut app, 't');
        assert_eq!(app.ledger, Loaded::Loading);
        let [Effect::LoadLedger(query)] = effects.as_slice() else {
            panic!("t must load the ledger once, got {effects:?}");
        };
        assert_eq!(query.offset, 0);
        assert_eq!(query.limit, LEDGER_PAGE);
        seen.push(query.status);
    }
    assert_eq!(
        seen,
        vec![
            Some(Status::Pending),
            Some(Status::Sent),
            Some(Status::Failed),
            None
        ]
    );
    // t means nothing outside the ledger view.
    ch(&mut app, '1');
    assert_eq!(ch(&mut app, 't'), vec![]);
    assert_eq!(app.ledger_status, None);
}

#[test]
fn ledger_search_is_a_query_not_a_local_filter() {
    let mut app = app_with(five());
    ch(&mut app, '3');
    ch(&mut app, '/');
    // The store searches every entry: typing asks it once a tick, not once a letter,
    // and Enter asks at once. An answer to an older query is dropped when it comes.
    for c in "ord".chars() {
        assert_eq!(ch(&mut app, c), vec![], "typing {c:?}");
    }
    assert_eq!(
        app.filter(View::Ledger),
        "ord",
        "the title shows what is typed"
    );
    assert_eq!(
        app.update(Action::Tick(now() + 500)),
        vec![Effect::LoadLedger(PageQuery {
            status: None,
            search: Some("ord".into()),
            offset: 0,
            limit: LEDGER_PAGE,
        })]
    );
    assert_eq!(app.update(Action::Tick(now() + 1000)), vec![], "asked once");
    ch(&mut app, 'e');
    ch(&mut app, 'r');
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![Effect::LoadLedger(PageQuery {
            status: None,
            search: Some("order".into()),
            offset: 0,
            limit: LEDGER_PAGE,
        })]
    );
    assert_eq!(
        app.update(Action::Tick(now() + 1500)),
        vec![],
        "Enter asked"
    );
    ch(&mut app, '/');
    assert_eq!(press(&mut app, KeyCode::Enter), vec![], "already asked");
    ch(&mut app, '/');
    assert_eq!(
        press(&mut app, KeyCode::Esc),
        vec![Effect::LoadLedger(PageQuery {
            status: None,
            search: None,
            offset: 0,
            limit: LEDGER_PAGE,
        })]
    );
}

fn ledger_page(n: usize) -> Vec<Entry> {
    (0..n)
        .map(|i| entry(&format!("k{i:03}"), "sent", i as i64 * MIN))
        .collect()
}

#[test]
fn moving_past_a_full_ledger_page_loads_the_next() {
    let mut app = app_with(five());
    ch(&mut app, '3');
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(ledger_page(LEDGER_PAGE)),
    });
    ch(&mut app, 'G');
    assert_eq!(app.selected(View::Ledger), LEDGER_PAGE - 1);
    let effects = ch(&mut app, 'j');
    assert_eq!(
        effects,
        vec![Effect::LoadLedger(PageQuery {
            status: None,
            search: None,
            offset: 200,
            limit: LEDGER_PAGE,
        })]
    );
    assert_eq!(app.ledger_offset, 200);
    assert_eq!(app.selected(View::Ledger), 0);

    // The page that arrives is shown; an answer to an older query is dropped.
    app.update(Action::LedgerLoaded {
        query: PageQuery {
            offset: 0,
            ..app.ledger_query()
        },
        result: Ok(ledger_page(3)),
    });
    assert_eq!(app.ledger, Loaded::Loading);
    app.update(Action::LedgerLoaded {
        query: app.ledger_query(),
        result: Ok(ledger_page(7)),
    });
    assert_eq!(app.visible_ledger().len(), 7);

    // A short page is the last: moving past its end loads nothing.
    ch(&mut app, 'G');
    assert_eq!(ch(&mut app, 'j'), vec![]);
    assert_eq!(app.selected(View::Ledger), 6);
}

#[test]
fn approve_opens_a_form_with_defaults_and_the_cursor_in_note() {
    let mut app = app_with(five());
    ch(&mut app, 'j');
    assert_eq!(ch(&mut app, 'a'), vec![]);
    let f = form(&app);
    assert_eq!(
        f.kind,
        FormKind::Approve {
            id: 2,
            revision: 1,
            version: 1,
            suspicious: false,
            drifted: false,
            unchecked: false,
            quorum: None,
            expired: None,
            edit: None,
            who: "p2@example.com · reminder".into(),
        }
    );
    assert_eq!(
        field_values(&app),
        vec![
            ("TTL", "12h".to_owned()),
            ("Name", "dana".to_owned()),
            ("Note", String::new()),
        ]
    );
    assert_eq!(form(&app).fields[form(&app).focus].label, "Note");
    assert_eq!(form(&app).error, None);
}

#[test]
fn a_bad_ttl_keeps_the_form_with_an_error_and_no_effect() {
    let mut app = app_with(five());
    ch(&mut app, 'a');
    // From Note, Tab wraps round to TTL.
    press(&mut app, KeyCode::Tab);
    assert_eq!(form(&app).fields[form(&app).focus].label, "TTL");
    for _ in 0..3 {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "soon");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let error = form(&app).error.clone().expect("an error in the form");
    assert!(error.starts_with("TTL"), "{error}");
    assert_eq!(form(&app).value("TTL"), "soon", "what was typed is kept");

    // Typing again clears the error; an empty required field is named.
    for _ in 0..4 {
        press(&mut app, KeyCode::Backspace);
    }
    assert_eq!(form(&app).error, None);
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert_eq!(form(&app).error.as_deref(), Some("TTL is needed."));

    type_text(&mut app, "0s");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert_eq!(
        form(&app).error.as_deref(),
        Some("TTL must be longer than zero.")
    );
}

#[test]
fn approve_confirms_then_returns_exactly_the_decision_shown() {
    let mut app = app_with(five());
    ch(&mut app, 'j');
    ch(&mut app, 'a');
    type_text(&mut app, "looks right");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let c = confirm(&app);
    assert_eq!(c.warning, None);
    assert_eq!(
        c.lines,
        vec![
            "Approve draft 2 (revision 1) for 12h, as dana?".to_owned(),
            "The send: p2@example.com · reminder".to_owned()
        ]
    );
    let effects = press(&mut app, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::Approve {
            id: 2,
            revision: 1,
            version: 1,
            ttl: "12h".into(),
            by: "dana".into(),
            note: Some("looks right".into()),
        }]
    );
    assert!(app.overlay.is_none());
    assert_eq!(status(&app), (send_once::ui::app::WORKING, true));
    assert!(app.working());
}

#[test]
fn an_empty_note_is_no_note_and_a_changed_ttl_and_name_are_used() {
    let mut app = app_with(five());
    ch(&mut app, 'a');
    press(&mut app, KeyCode::Tab); // TTL
    for _ in 0.."12h".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "30m");
    press(&mut app, KeyCode::Down); // Name
    for _ in 0.."dana".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "lee");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        confirm(&app).lines,
        vec![
            "Approve draft 1 (revision 1) for 30m, as lee?".to_owned(),
            "The send: p1@example.com · reminder".to_owned()
        ]
    );
    assert_eq!(
        ch(&mut app, 'y'),
        vec![Effect::Approve {
            id: 1,
            revision: 1,
            version: 1,
            ttl: "30m".into(),
            by: "lee".into(),
            note: None,
        }]
    );
}

#[test]
fn a_reload_under_an_open_form_does_not_change_what_is_approved() {
    let mut app = app_with(five());
    ch(&mut app, 'a');
    // The submitter sends revision 2 while the form for revision 1 is open.
    let mut revised = five();
    let mut second = revised[0].revisions[0].clone();
    second.revision = 2;
    second.payload = json!({"to": "p1@example.com", "body": "changed"}).to_string();
    revised[0].revision = 2;
    revised[0].revisions.push(second);
    app.update(Action::ApprovalsLoaded(Ok(revised)));
    press(&mut app, KeyCode::Enter);
    // What was read was revision 1: approving it names revision 1, which the ledger
    // then refuses as stale rather than approving unread text.
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![Effect::Approve {
            id: 1,
            revision: 1,
            version: 1,
            ttl: "12h".into(),
            by: "dana".into(),
            note: None,
        }]
    );
}

#[test]
fn esc_in_a_confirmation_writes_nothing() {
    let mut app = app_with(five());
    ch(&mut app, 'a');
    press(&mut app, KeyCode::Enter);
    confirm(&app);
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
    assert!(app.overlay.is_none());
    assert_eq!(status(&app), ("Cancelled; nothing was written.", true));

    // n cancels too; other keys leave the confirmation up.
    ch(&mut app, 'a');
    press(&mut app, KeyCode::Enter);
    assert_eq!(ch(&mut app, 'j'), vec![]);
    confirm(&app);
    assert_eq!(ch(&mut app, 'n'), vec![]);
    assert!(app.overlay.is_none());

    // Esc in the form itself cancels as well.
    ch(&mut app, 'a');
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
    assert!(app.overlay.is_none());
    assert_eq!(status(&app), ("Cancelled; nothing was written.", true));
}

#[test]
fn a_suspicious_draft_needs_y_not_enter() {
    let mut app = app_with(vec![suspicious_draft(7)]);
    ch(&mut app, 'a');
    assert_eq!(
        form(&app).kind,
        FormKind::Approve {
            id: 7,
            revision: 1,
            version: 1,
            suspicious: true,
            drifted: false,
            unchecked: false,
            quorum: None,
            expired: None,
            edit: None,
            who: "eve@example.com · reminder".into(),
        }
    );
    press(&mut app, KeyCode::Enter);
    let warning = confirm(&app).warning.clone().expect("a warning");
    assert!(warning.contains("Press y"), "{warning}");
    // Enter is what a hurried person presses twice: it must not approve this one.
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    confirm(&app);
    assert_eq!(
        ch(&mut app, 'y'),
        vec![Effect::Approve {
            id: 7,
            revision: 1,
            version: 1,
            ttl: "12h".into(),
            by: "dana".into(),
            note: None,
        }]
    );
}

#[test]
fn a_drifted_draft_says_dispatch_will_refuse() {
    let mut app = app_with(vec![drifted_draft(4)]);
    ch(&mut app, 'a');
    assert!(matches!(
        form(&app).kind,
        FormKind::Approve { drifted: true, .. }
    ));
    press(&mut app, KeyCode::Enter);
    let c = confirm(&app);
    assert_eq!(c.warning, None, "drift is said, but Enter still confirms");
    assert!(c.lines[2].contains("stale_facts"), "{:?}", c.lines);
    assert_eq!(press(&mut app, KeyCode::Enter).len(), 1);
}

#[test]
fn reject_starts_in_reason_and_refuses_an_empty_one() {
    let mut app = app_with(five());
    ch(&mut app, 'G');
    assert_eq!(ch(&mut app, 'r'), vec![]);
    assert_eq!(
        form(&app).kind,
        FormKind::Reject {
            id: 5,
            version: 1,
            who: "p5@example.com · reminder".into()
        }
    );
    assert_eq!(form(&app).fields[form(&app).focus].label, "Reason");
    assert_eq!(
        field_values(&app),
        vec![("Reason", String::new()), ("Name", "dana".to_owned())]
    );
    type_text(&mut app, "   ");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert_eq!(form(&app).error.as_deref(), Some("Reason is needed."));
    type_text(&mut app, "wrong amount");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        confirm(&app).lines,
        vec![
            "Reject draft 5 as dana?".to_owned(),
            "The send: p5@example.com · reminder".to_owned(),
            "Reason: wrong amount".to_owned()
        ]
    );
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![Effect::Reject {
            id: 5,
            version: 1,
            reason: "wrong amount".into(),
            by: "dana".into(),
        }]
    );
}

#[test]
fn recheck_runs_only_with_a_recheck_command() {
    let mut with = draft(1, "a@example.com");
    with.recheck = Some(vec!["./facts.sh".into()]);
    let mut app = app_with(vec![with, draft(2, "b@example.com")]);
    assert_eq!(ch(&mut app, 'c'), vec![Effect::Recheck { id: 1 }]);
    assert_eq!(status(&app).1, true);
    ch(&mut app, 'j');
    assert_eq!(ch(&mut app, 'c'), vec![]);
    let (message, ok) = status(&app);
    assert!(!ok);
    assert!(message.contains("no recheck command"), "{message}");
}

#[test]
fn mark_sent_resolves_with_note_name_and_provider_id() {
    let mut app = app_with(five());
    ch(&mut app, '2');
    ch(&mut app, 'j');
    assert_eq!(ch(&mut app, 's'), vec![]);
    assert!(
        matches!(&form(&app).kind, FormKind::MarkSent { key, .. } if key == "order-2:charge"),
        "{:?}",
        form(&app).kind
    );
    assert_eq!(form(&app).fields[form(&app).focus].label, "Note");
    type_text(&mut app, "provider dashboard shows it");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    assert_eq!(form(&app).fields[form(&app).focus].label, "Provider id");
    type_text(&mut app, "msg_123");
    let seen = seen_in_form(&app);
    assert_eq!((seen.status, seen.attempts), (Status::Pending, Some(1)));
    press(&mut app, KeyCode::Enter);
    assert_eq!(confirm(&app).title, "Mark sent");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![Effect::Resolve {
            key: "order-2:charge".into(),
            status: Status::Sent,
            by: "dana".into(),
            note: Some("provider dashboard shows it".into()),
            provider_id: Some("msg_123".into()),
            seen,
            even_if_running: false,
            even_if_found: false,
        }]
    );
}

#[test]
fn mark_failed_resolves_without_a_provider_id() {
    let mut app = app_with(five());
    ch(&mut app, '2');
    assert_eq!(ch(&mut app, 'f'), vec![]);
    assert_eq!(
        field_values(&app),
        vec![("Note", String::new()), ("Name", "dana".to_owned())]
    );
    type_text(&mut app, "bounced");
    let seen = seen_in_form(&app);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        ch(&mut app, 'y'),
        vec![Effect::Resolve {
            key: "order-1:charge".into(),
            status: Status::Failed,
            by: "dana".into(),
            note: Some("bounced".into()),
            provider_id: None,
            seen,
            even_if_running: false,
            even_if_found: false,
        }]
    );
}

/// What the open mark-sent or mark-failed form says the person is looking at.
fn seen_in_form(app: &App) -> Seen {
    match &form(app).kind {
        FormKind::MarkSent { seen, .. } | FormKind::MarkFailed { seen, .. } => seen.clone(),
        other => panic!("not a mark form: {other:?}"),
    }
}

#[test]
fn decision_keys_work_only_in_their_view() {
    let mut app = app_with(five());
    // s and f mean nothing on a draft; a and r nothing on an unknown send.
    assert_eq!(ch(&mut app, 's'), vec![]);
    assert_eq!(ch(&mut app, 'f'), vec![]);
    assert!(app.overlay.is_none());
    ch(&mut app, '2');
    assert_eq!(ch(&mut app, 'a'), vec![]);
    assert_eq!(ch(&mut app, 'r'), vec![]);
    assert!(app.overlay.is_none());
}

#[test]
fn a_failed_result_is_shown_and_everything_reloads() {
    let mut app = app_with(five());
    let message = "Draft 2 was already approved by lee at 2026-09-27T11:59:00.000Z.";
    let effects = app.update(Action::Done(Outcome::Refused {
        subject: "draft 2".into(),
        why: message.into(),
    }));
    assert_eq!(effects, reloads(&app));
    assert_eq!(status(&app), (message, false));
}

#[test]
fn a_change_by_someone_else_reloads() {
    let mut app = app_with(five());
    assert_eq!(app.update(Action::Changed), reloads(&app));
    // Time passing alone loads nothing.
    assert_eq!(app.update(Action::Tick(now() + 500)), vec![]);
    assert_eq!(app.now, now() + 500);
}

#[test]
fn a_reload_keeps_the_selection_on_the_same_draft() {
    let mut app = app_with(five());
    ch(&mut app, 'j');
    ch(&mut app, 'j');
    assert_eq!(selected_id(&app), Some(3));
    // Draft 1 was decided by someone else; a new draft 9 arrived first.
    let moved = vec![
        draft(9, "new@example.com"),
        draft(2, "p2@example.com"),
        draft(3, "p3@example.com"),
        draft(4, "p4@example.com"),
    ];
    app.update(Action::ApprovalsLoaded(Ok(moved)));
    assert_eq!(selected_id(&app), Some(3));
    assert_eq!(app.selected(View::Approvals), 2);

    // When the selected draft is gone, the selection stays in the list.
    ch(&mut app, 'G');
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(
        9,
        "new@example.com",
    )])));
    assert_eq!(selected_id(&app), Some(9));

    // The same holds for unknown sends, by key.
    ch(&mut app, '2');
    ch(&mut app, 'j');
    assert_eq!(app.selected_unknown().unwrap().key(), "order-2:charge");
    app.update(Action::UnknownLoaded(Ok(vec![
        entry("order-0:charge", "pending", 99 * MIN),
        entry("order-1:charge", "pending", 90 * MIN),
        entry("order-2:charge", "pending", 30 * MIN),
    ])));
    assert_eq!(app.selected_unknown().unwrap().key(), "order-2:charge");
}

#[test]
fn a_failed_load_is_kept_as_the_reason() {
    let mut app = new_app();
    app.update(Action::ApprovalsLoaded(Err("database is locked".into())));
    assert_eq!(app.approvals, Loaded::Failed("database is locked".into()));
    app.update(Action::CountsLoaded(Err("no such table".into())));
    assert_eq!(app.counts_error.as_deref(), Some("no such table"));
    app.update(Action::CountsLoaded(Ok(Census::default())));
    assert_eq!(app.counts_error, None);
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = app_with(five());
    assert_eq!(ch(&mut app, 'q'), vec![Effect::Quit]);
    assert!(app.quit);

    // Ctrl-c quits from anywhere, a form included, where q is only text.
    let mut app = app_with(five());
    ch(&mut app, 'a');
    assert_eq!(ch(&mut app, 'q'), vec![]);
    assert!(!app.quit);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.update(Action::Key(ctrl_c)), vec![Effect::Quit]);
    assert!(app.quit);
}

#[test]
fn key_releases_are_ignored() {
    // Terminals with the kitty protocol report releases; acting on them would act twice.
    let mut app = app_with(five());
    let mut release = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    assert_eq!(app.update(Action::Key(release)), vec![]);
    assert_eq!(app.selected(View::Approvals), 0);
}

#[test]
fn help_opens_with_question_mark_and_closes_with_esc() {
    let mut app = app_with(five());
    assert_eq!(ch(&mut app, '?'), vec![]);
    assert!(matches!(app.overlay, Some(Overlay::Help)));
    // Keys under the help do nothing: the person is reading.
    assert_eq!(ch(&mut app, 'j'), vec![]);
    assert_eq!(ch(&mut app, 'a'), vec![]);
    assert!(matches!(app.overlay, Some(Overlay::Help)));
    assert_eq!(app.selected(View::Approvals), 0);
    assert_eq!(press(&mut app, KeyCode::Esc), vec![]);
    assert!(app.overlay.is_none());
    // q closes the help rather than quitting.
    ch(&mut app, '?');
    assert_eq!(ch(&mut app, 'q'), vec![]);
    assert!(app.overlay.is_none());
    assert!(!app.quit);
}

#[test]
fn every_hint_is_in_the_help_and_every_binding_is_reachable() {
    for view in View::ALL {
        let help: Vec<(&str, &str)> = keymap::help(view)
            .into_iter()
            .flat_map(|(_, items)| items)
            .collect();
        let hints = keymap::hints(view);
        assert!(!hints.is_empty(), "{view:?} has hints");
        // Every key is listed once in the help.
        let mut labels: Vec<&str> = help.iter().map(|(key, _)| *key).collect();
        labels.sort_unstable();
        let count = labels.len();
        labels.dedup();
        assert_eq!(labels.len(), count, "{view:?}: a key is listed twice");
        for binding in BINDINGS.iter().filter(|b| keymap::applies(b, view)) {
            if let Some((key, _)) = binding.hint {
                assert!(
                    binding
                        .key_label
                        .starts_with(key.split('/').next().unwrap()),
                    "{view:?}: hint {key:?} is not the key {:?}",
                    binding.key_label
                );
            }
        }
        // Each binding's keys reach its own command: no earlier row shadows them.
        for binding in BINDINGS
            .iter()
            .filter(|b| b.views.is_empty() || b.views.contains(&view))
        {
            assert!(help.contains(&(binding.key_label, binding.label)));
            for (code, modifiers) in binding.keys {
                let key = KeyEvent::new(*code, *modifiers);
                assert_eq!(
                    command_for(view, &key),
                    Some(binding.command),
                    "{view:?}: {code:?} {modifiers:?}"
                );
            }
        }
    }
    // A view's own keys are not offered in the others.
    let approvals: Vec<_> = keymap::hints(View::Approvals);
    assert!(approvals.contains(&("a", "approve")));
    assert!(!approvals.contains(&("s", "sent")));
    assert!(keymap::hints(View::Unknown).contains(&("s", "sent")));
    assert!(keymap::hints(View::Ledger).contains(&("t", "status")));
}

fn wheel(app: &mut App, kind: crossterm::event::MouseEventKind) -> Vec<Effect> {
    app.update(Action::Mouse(crossterm::event::MouseEvent {
        kind,
        column: 10,
        row: 5,
        modifiers: KeyModifiers::NONE,
    }))
}

#[test]
fn the_mouse_wheel_moves_the_selection_but_not_under_an_overlay() {
    use crossterm::event::MouseEventKind;
    let mut app = app_with(five());
    let first = selected_id(&app);
    assert_eq!(wheel(&mut app, MouseEventKind::ScrollDown), vec![]);
    assert_ne!(selected_id(&app), first);
    wheel(&mut app, MouseEventKind::ScrollUp);
    assert_eq!(selected_id(&app), first);
    ch(&mut app, '?');
    wheel(&mut app, MouseEventKind::ScrollDown);
    assert_eq!(selected_id(&app), first, "the help overlay takes the wheel");
}

#[test]
fn shift_j_and_k_scroll_the_details_and_a_new_selection_starts_at_the_top() {
    let mut app = app_with(five());
    assert_eq!(app.detail_scroll, 0);
    for _ in 0..3 {
        assert_eq!(app.update(key_with('J', KeyModifiers::SHIFT)), vec![]);
    }
    assert_eq!(app.detail_scroll, 9);
    app.update(key_with('K', KeyModifiers::SHIFT));
    assert_eq!(app.detail_scroll, 6);
    ch(&mut app, 'j');
    assert_eq!(
        app.detail_scroll, 0,
        "another draft's details start at the top"
    );
    app.update(key_with('K', KeyModifiers::SHIFT));
    assert_eq!(app.detail_scroll, 0, "never above the top");
}

fn key_with(c: char, modifiers: KeyModifiers) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), modifiers))
}

/// A bulk reject applies to the marked drafts the filter shows, and says how many
/// marked ones it leaves; with none of them shown, it opens nothing and says why.
#[test]
fn a_bulk_reject_leaves_marked_drafts_the_filter_hides() {
    let mut app = app_with(vec![
        draft(1, "ana@example.com"),
        draft(2, "bo@example.com"),
    ]);
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('a'),
        KeyModifiers::CONTROL,
    )));
    ch(&mut app, '/');
    type_text(&mut app, "bo@");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_drafts().len(), 1);
    ch(&mut app, 'r');
    let form = form(&app);
    assert_eq!(
        form.kind,
        FormKind::RejectMany {
            drafts: vec![(2, 1, "bo@example.com · reminder".into())]
        }
    );
    assert!(
        form.title
            .contains("(1 marked but hidden by the filter are left)"),
        "{}",
        form.title
    );
    press(&mut app, KeyCode::Esc);
    // A filter that shows no marked draft: nothing opens, and the screen says why.
    let mut app = app_with(vec![
        draft(1, "ana@example.com"),
        draft(2, "bo@example.com"),
    ]);
    ch(&mut app, ' ');
    ch(&mut app, '/');
    type_text(&mut app, "bo@");
    press(&mut app, KeyCode::Enter);
    assert_eq!(ch(&mut app, 'r'), vec![]);
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    let status = app.status.as_ref().expect("a status line");
    assert!(
        status.text.contains("hidden by the filter"),
        "{}",
        status.text
    );
}

/// A bulk settle in the Unknown sends view must apply to what the screen shows. Rows
/// marked earlier and then hidden by a filter are not on the screen when the person
/// presses `f`, so they must not be settled with the shown row. Today they are: the
/// confirmation lists the hidden rows first and the shown row falls into "… and N more".
/// Marked failed, each hidden send is sent again on its next run.
mod bulk_settle_of_rows_shown {
    use super::{MIN, ago, ch, new_app, press, type_text};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use serde_json::json;

    use send_once::ledger::Entry;
    use send_once::ui::action::{Action, Effect};
    use send_once::ui::app::Overlay;

    fn pending(key: &str, to: &str, intent: &str, claimed_min_ago: i64) -> Entry {
        let at = ago(claimed_min_ago * MIN);
        Entry::from_value(json!({
            "key": key,
            "status": "pending",
            "attempts": 1,
            "claimedAt": at,
            "updatedAt": at,
            "meta": {"channel": "email", "to": to, "intent": intent},
            "error": "Delivery is unknown: the command exited with status 7",
            "uncertain": true,
        }))
        .unwrap()
    }

    fn resolved_keys(effects: &[Effect]) -> Vec<String> {
        let mut keys = Vec::new();
        for effect in effects {
            match effect {
                Effect::Resolve { key, .. } => keys.push(key.clone()),
                Effect::Batch(items) => keys.extend(resolved_keys(items)),
                _ => {}
            }
        }
        keys
    }

    #[test]
    fn marked_rows_hidden_by_the_filter_are_not_settled_with_the_shown_one() {
        let mut app = new_app();
        app.update(Action::ApprovalsLoaded(Ok(vec![])));
        app.update(Action::UnknownLoaded(Ok(vec![
            pending("dunning-1", "cust1@acme.com", "dunning:1", 50),
            pending("dunning-2", "cust2@acme.com", "dunning:2", 40),
            pending("otp-1", "+15550001111", "otp:1", 30),
        ])));
        ch(&mut app, '2');
        // Mark every row, then narrow the list to the one send the person means.
        app.update(Action::Key(KeyEvent::new(
            KeyCode::Char('a'),
            KeyModifiers::CONTROL,
        )));
        ch(&mut app, '/');
        type_text(&mut app, "otp");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.visible_unknown().len(),
            1,
            "the filter shows the otp send alone"
        );

        ch(&mut app, 'f');
        type_text(&mut app, "otp not delivered");
        press(&mut app, KeyCode::Enter);
        assert!(
            matches!(app.overlay, Some(Overlay::Confirm(_))),
            "{:?}",
            app.overlay
        );
        let effects = ch(&mut app, 'y');
        assert_eq!(
            resolved_keys(&effects),
            vec!["otp-1".to_owned()],
            "only the row on the screen may be marked failed; the hidden dunning sends would be sent again"
        );
    }
}

/// A pending row whose claim time cannot be read, or lies further ahead than the
/// window, is not "in flight?" (forever, as it was): its age says nothing, and the
/// row is an unknown send for a person to check. A claim a little ahead (another
/// host's clock) still may be.
#[test]
fn a_claim_time_that_cannot_age_a_row_does_not_make_it_in_flight() {
    let with_claim = |claimed_at: &str| {
        Entry::from_value(json!({
            "key": "k", "status": "pending", "attempts": 1,
            "claimedAt": claimed_at, "updatedAt": claimed_at, "meta": null,
        }))
        .unwrap()
    };
    let window = 5 * MIN;
    for claimed_at in ["", "bad", &ago(-60 * MIN)] {
        assert!(
            !send_once::ui::app::in_flight(&with_claim(claimed_at), now(), window),
            "{claimed_at:?}"
        );
    }
    for claimed_at in [ago(-2 * MIN), ago(MIN)] {
        assert!(
            send_once::ui::app::in_flight(&with_claim(&claimed_at), now(), window),
            "{claimed_at:?}"
        );
    }
}

/// A claim that records its claimer's limit is in flight by that limit, as `show` and
/// the ledger judge it, not by the screen's `--older-than` (shift AD7: after a proxy
/// was killed, the screen said "less than 5m", and its "failed" was refused with a
/// flag the screen has no way to give). Confirmed against the warning, the decision
/// says so, and only `y` confirms it.
#[test]
fn a_claim_with_a_recorded_limit_is_in_flight_by_that_limit_and_failed_only_as_confirmed() {
    // No host or boot recorded: its process cannot be looked for, only its limit read.
    let limited = |key: &str, claimed_ms_ago: i64, limit_ms: i64| {
        Entry::from_value(json!({
            "key": key, "status": "pending", "attempts": 1,
            "claimedAt": ago(claimed_ms_ago), "updatedAt": ago(claimed_ms_ago),
            "meta": null, "claimer": {"pid": 4_000_000, "limitMs": limit_ms},
        }))
        .unwrap()
    };
    let mut app = new_app();
    let unknown = vec![
        // An hour's limit, claimed ten minutes ago: past the screen's five minutes.
        limited("wire-1", 10 * MIN, 60 * MIN),
        // Ten seconds' limit, claimed a minute ago: over, though inside five minutes.
        limited("mail-2", MIN, 10_000),
    ];
    assert_eq!(app.update(Action::UnknownLoaded(Ok(unknown))), vec![]);
    ch(&mut app, '2');
    let rows = app.unknown.ready().unwrap().clone();
    assert!(matches!(
        app.still_sending(&rows[0]),
        StillSending::Known(why) if why.contains("limit of 1h")
    ));
    assert_eq!(app.still_sending(&rows[1]), StillSending::No);
    assert_eq!(ch(&mut app, 'f'), vec![]);
    let seen = seen_in_form(&app);
    press(&mut app, KeyCode::Enter);
    let shown = confirm(&app);
    assert!(
        shown.lines.iter().any(|l| l.contains("limit of 1h")),
        "{shown:?}"
    );
    assert!(shown.warning.is_some(), "only y confirms: {shown:?}");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![], "Enter does not");
    assert_eq!(
        ch(&mut app, 'y'),
        vec![Effect::Resolve {
            key: "wire-1".into(),
            status: Status::Failed,
            by: "dana".into(),
            note: None,
            provider_id: None,
            seen,
            even_if_running: true,
            even_if_found: false,
        }]
    );
}

/// A bulk decision that was refused, in part or whole, stays on the status line until
/// a key (a person must not miss that it did not apply), and past two reasons it
/// points at the Decisions view rather than cutting words off the screen.
#[test]
fn a_refused_bulk_decision_stays_and_points_at_the_decisions_view() {
    let mut app = app_with(five());
    let refusals: Vec<Outcome> = (1..=5)
        .map(|i| Outcome::Refused {
            subject: format!("key-{i}"),
            why: format!("key-{i} changed after it was shown: it is now failed, by user{i}"),
        })
        .collect();
    app.update(Action::Done(Outcome::Batch(refusals)));
    let text = status(&app).0.to_owned();
    assert!(text.contains("Refused 5: "), "{text}");
    assert!(
        text.contains("by user1") && text.contains("by user2"),
        "{text}"
    );
    assert!(!text.contains("by user3"), "{text}");
    assert!(
        text.contains("and 3 more reasons, each in view 4 (Decisions)"),
        "{text}"
    );
    app.update(Action::Tick(
        now() + 10 * send_once::ui::app::STATUS_FADE_MS,
    ));
    assert_eq!(status(&app).0, text, "a refusal does not fade");
    ch(&mut app, 'j');
    assert!(app.status.is_none(), "the next key clears it");
    // So does a click or the wheel: the person has moved on (AG6: a refusal stayed
    // beside whatever row was clicked).
    app.update(Action::Done(Outcome::Batch(vec![Outcome::Refused {
        subject: "key-1".into(),
        why: "key-1 changed after it was shown".into(),
    }])));
    assert!(app.status.is_some());
    wheel(&mut app, crossterm::event::MouseEventKind::ScrollDown);
    assert!(app.status.is_none(), "the wheel clears it");
}

/// K2: `s` in the Ledger view opens the sent form for a failed entry, saying so.
#[test]
fn s_in_the_ledger_view_records_a_failed_entry_sent() {
    let mut app = app_with(five());
    ch(&mut app, '3');
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(vec![entry("k-failed", "failed", MIN)]),
    });
    ch(&mut app, 's');
    let Some(Overlay::Form(form)) = &app.overlay else {
        panic!("no form: {:?} {:?}", app.overlay, app.status);
    };
    assert!(
        form.title.ends_with("sent (it is failed now)"),
        "{}",
        form.title
    );
    press(&mut app, KeyCode::Enter);
    let effects = press(&mut app, KeyCode::Enter);
    let [Effect::Resolve { status, seen, .. }] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    assert_eq!(*status, Status::Sent);
    assert_eq!(seen.status, Status::Failed);
}

/// The draft the person had selected, decided by someone else, leaves the list with a
/// word saying so and where the selection is now; one this screen decided leaves it
/// without (shift round, session 40: AD5, the selection moved onto another send
/// without a word).
#[test]
fn a_selected_draft_decided_elsewhere_is_said_to_have_left() {
    let mut app = app_with(five());
    ch(&mut app, 'j');
    assert_eq!(app.selected_draft().unwrap().id, 2);
    app.status = None;
    let mut rest = five();
    rest.remove(1);
    app.update(Action::ApprovalsLoaded(Ok(rest.clone())));
    let (said, _) = status(&app);
    assert!(
        said.starts_with(
            "Draft 2 (p2@example.com · reminder) left this list: someone else decided it"
        ) && said.ends_with("The selection is on draft 3 now."),
        "{said}"
    );
    // Its own decision is not remarked on.
    app.status = None;
    ch(&mut app, 'r');
    type_text(&mut app, "wrong amount");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Enter);
    app.status = None;
    rest.remove(1);
    app.update(Action::ApprovalsLoaded(Ok(rest)));
    assert!(app.status.is_none(), "{:?}", app.status);
    assert_eq!(app.selected_draft().unwrap().id, 4);
}
