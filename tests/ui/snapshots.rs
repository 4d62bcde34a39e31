//! What the TUI draws, as text, from fixed hand-made data and a fixed clock, so a
//! change to any screen shows up as a snapshot diff a person reads. Colour does not
//! survive a snapshot, so the few places where style carries meaning are asserted on
//! the cells; and every kind of hostile text is drawn into every view to prove none of
//! it reaches the screen raw.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use send_once::ledger::{Census, Entry, Status, time};
use send_once::review::drift::LatestFacts;
use send_once::review::{Draft, DraftState, Revision};
use send_once::ui::action::{Action, Outcome};
use send_once::ui::app::{App, Options};
use send_once::ui::keymap::{self, View};
use send_once::ui::theme::Theme;
use send_once::ui::view;
use serde_json::{Map, Value, json};

use crate::harness;
use harness::queued_draft;

const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;

fn obj(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

// ---------------------------------------------------------------------------------
// Fixtures

fn revision(n: i64, at: i64, payload: Value, facts: Value) -> Revision {
    Revision {
        revision: n,
        payload: payload.to_string(),
        payload_hash: format!("sha256-of-revision-{n}"),
        facts: obj(facts),
        submitted_at: ago(at),
        submitted_by: Some("billing-agent".into()),
    }
}

fn base_draft(id: i64, key: &str, created: i64, meta: Value) -> Draft {
    let mut d = queued_draft(id, key, ago(created));
    d.submitted_by = Some("billing-agent".into());
    d.recheck = Some(vec!["./facts.sh".into()]);
    d.meta = Some(obj(meta));
    d
}

fn checked(facts: Value, at: i64) -> LatestFacts {
    LatestFacts {
        facts: Some(obj(facts)),
        checked_at: Some(ago(at)),
        error: None,
    }
}

/// One draft of each kind a reviewer meets, oldest first as the queue lists them.
fn drafts() -> Vec<Draft> {
    let facts = json!({"balance": 120, "plan": "pro"});

    let mut fresh = base_draft(
        11,
        "invoice-1042",
        5 * MIN,
        json!({"to": "ana@example.com", "intent": "invoice reminder"}),
    );
    fresh.revisions = vec![revision(
        1,
        5 * MIN,
        json!({"to": "ana@example.com", "subject": "Invoice 1042", "amount": 120}),
        facts.clone(),
    )];
    fresh.latest = checked(facts.clone(), MIN);

    let mut revised = base_draft(
        12,
        "refund-77",
        3 * HOUR,
        json!({"to": "bo@example.com", "intent": "refund notice"}),
    );
    revised.revision = 2;
    revised.version = 2;
    revised.revisions = vec![
        revision(
            1,
            3 * HOUR,
            json!({"to": "bo@example.com", "amount": 40, "currency": "EUR"}),
            facts.clone(),
        ),
        revision(
            2,
            HOUR,
            json!({"to": "bo@example.com", "amount": 45, "currency": "EUR", "note": "incl. fee"}),
            facts.clone(),
        ),
    ];

    let mut edited = base_draft(
        13,
        "renewal-9",
        DAY + 2 * HOUR,
        json!({"to": "cy@example.com", "intent": "renewal"}),
    );
    edited.state = DraftState::Approved;
    edited.revision = 2;
    edited.version = 3;
    edited.approved_revision = Some(1);
    edited.approval = Some(json!({"expiresAt": "2026-09-28T00:00:00.000Z"}));
    edited.decided_by = Some("dana".into());
    edited.decided_at = Some(ago(DAY));
    edited.revisions = vec![
        revision(
            1,
            DAY + 2 * HOUR,
            json!({"to": "cy@example.com", "price": 99}),
            facts.clone(),
        ),
        revision(
            2,
            2 * HOUR,
            json!({"to": "cy@example.com", "price": 199}),
            facts.clone(),
        ),
    ];
    edited.latest = checked(facts.clone(), 10 * MIN);

    let mut drifted = base_draft(
        14,
        "dunning-3",
        2 * DAY,
        json!({"to": "di@example.com", "intent": "payment overdue"}),
    );
    drifted.revisions = vec![revision(
        1,
        2 * DAY,
        json!({"to": "di@example.com", "overdue": 120}),
        facts.clone(),
    )];
    drifted.latest = checked(json!({"balance": 0, "plan": "pro"}), 2 * MIN);

    let mut recheck_failed = base_draft(
        15,
        "welcome-5",
        2 * DAY + 3 * HOUR,
        json!({"to": "ed@example.com", "intent": "welcome"}),
    );
    recheck_failed.revisions = vec![revision(
        1,
        2 * DAY + 3 * HOUR,
        json!({"to": "ed@example.com", "template": "welcome-v2"}),
        facts.clone(),
    )];
    recheck_failed.latest = LatestFacts {
        facts: Some(obj(facts.clone())),
        checked_at: Some(ago(DAY)),
        error: Some("./facts.sh exited with status 1: connection refused".into()),
    };

    let mut suspicious = base_draft(
        16,
        "promo-8",
        3 * DAY,
        json!({"to": "fi@example.com", "intent": "promo"}),
    );
    suspicious.revisions = vec![revision(
        1,
        3 * DAY,
        json!({
            "to": "fi@example.com",
            "body": "Hi\u{1b}[2J click invoice\u{202e}fdp.exe now\u{200b}!",
        }),
        json!({}),
    )];

    // The queue is oldest first.
    vec![suspicious, recheck_failed, drifted, edited, revised, fresh]
}

fn unknown() -> Vec<Entry> {
    let pending = |key: &str, attempts: u64, claimed: i64, error: Option<&str>, meta: Value| {
        let mut v = json!({
            "key": key,
            "status": "pending",
            "attempts": attempts,
            "claimedAt": ago(claimed),
            "updatedAt": ago(claimed),
            "meta": meta,
        });
        if let Some(e) = error {
            v["error"] = json!(e);
            v["uncertain"] = json!(true);
        }
        Entry::from_value(v).unwrap()
    };
    vec![
        pending(
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            3,
            3 * DAY + 4 * HOUR,
            Some("timed out after 30s\u{1b}[31m (provider said: \u{1b}]0;owned\u{7})"),
            json!({"to": "ana@example.com"}),
        ),
        pending(
            "order-77:charge",
            1,
            2 * HOUR + 15 * MIN,
            Some("connection reset by peer"),
            json!({"order": 77, "amount": "12.50 EUR"}),
        ),
        pending("order-78:charge", 2, 40 * MIN, None, json!(null)),
        pending("order-79:charge", 1, 2 * MIN, None, json!({"order": 79})),
    ]
}

fn ledger_entries() -> Vec<Entry> {
    let e = |v: Value| Entry::from_value(v).unwrap();
    vec![
        e(json!({
            "key": "order-80:charge", "status": "sent", "attempts": 1,
            "claimedAt": ago(MIN), "updatedAt": ago(MIN), "providerId": "ch_3PqA9x",
            "meta": {"order": 80},
        })),
        e(json!({
            "key": "order-79:charge", "status": "pending", "attempts": 1,
            "claimedAt": ago(2 * MIN), "updatedAt": ago(2 * MIN), "meta": {"order": 79},
        })),
        e(json!({
            "key": "newsletter-2026-09", "status": "failed", "attempts": 2,
            "claimedAt": ago(HOUR), "updatedAt": ago(HOUR),
            "error": "550 mailbox unavailable", "meta": null,
        })),
        e(json!({
            "key": "order-75:charge", "status": "sent", "attempts": 2,
            "claimedAt": ago(DAY), "updatedAt": ago(DAY - MIN), "providerId": "ch_3Pp001",
            "meta": null,
            "resolution": {"status": "sent", "by": "dana", "at": ago(DAY - MIN), "note": "seen in dashboard"},
        })),
    ]
}

fn census() -> Census {
    Census {
        total: 1234,
        sent: 1200,
        failed: 30,
        pending: 4,
        skipped: 0,
        pending_entries: Vec::new(),
        unreadable: Vec::new(),
    }
}

fn empty_app(no_queue: Option<&str>) -> App {
    App::new(Options {
        ledger_label: "/srv/billing/ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5 * MIN,
        no_queue: no_queue.map(str::to_owned),
        now: now(),
    })
}

/// Everything loaded: the app a reviewer sees a moment after opening.
fn loaded_app(drafts: Vec<Draft>, unknown: Vec<Entry>, ledger: Vec<Entry>) -> App {
    let mut app = empty_app(None);
    app.update(Action::ApprovalsLoaded(Ok(drafts)));
    app.update(Action::UnknownLoaded(Ok(unknown)));
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(ledger),
    });
    app.update(Action::CountsLoaded(Ok(census())));
    app
}

fn full_app() -> App {
    loaded_app(drafts(), unknown(), ledger_entries())
}

fn key(app: &mut App, code: KeyCode) {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn keys(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn select_draft(app: &mut App, id: i64) {
    key(app, KeyCode::Char('1'));
    key(app, KeyCode::Char('g'));
    while app.selected_draft().map(|d| d.id) != Some(id) {
        let before = app.selected(View::Approvals);
        key(app, KeyCode::Char('j'));
        assert_ne!(before, app.selected(View::Approvals), "no draft {id}");
    }
}

// ---------------------------------------------------------------------------------
// Drawing

fn draw_with(app: &mut App, w: u16, h: u16, theme: &Theme) -> Terminal<TestBackend> {
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| view::draw(f, app, theme)).unwrap();
    terminal
}

/// The screen as text, one line per row, trailing blanks trimmed.
fn screen(app: &mut App, w: u16, h: u16) -> String {
    let terminal = draw_with(app, w, h, &Theme::new(false));
    buffer_text(terminal.backend().buffer())
}

fn buffer_lines(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}

fn buffer_text(buffer: &Buffer) -> String {
    let mut out = String::new();
    for line in buffer_lines(buffer) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn snap(name: &str, app: &mut App, w: u16, h: u16) -> String {
    let text = screen(app, w, h);
    insta::assert_snapshot!(name, text);
    text
}

// ---------------------------------------------------------------------------------
// Snapshots: Approvals

#[test]
fn approvals_fresh_draft_80x24() {
    let mut app = full_app();
    select_draft(&mut app, 11);
    snap("approvals_fresh_80x24", &mut app, 80, 24);
}

#[test]
fn approvals_fresh_draft_100x30() {
    let mut app = full_app();
    select_draft(&mut app, 11);
    let text = snap("approvals_fresh_100x30", &mut app, 100, 30);
    assert!(text.contains("facts unchanged"), "{text}");
}

#[test]
fn approvals_revised_draft_shows_the_diff_from_the_previous_revision() {
    let mut app = full_app();
    select_draft(&mut app, 12);
    let text = snap("approvals_revised_100x30", &mut app, 100, 30);
    assert!(text.contains("Payload: +2 -1 since revision 1"), "{text}");
}

#[test]
fn approvals_approved_then_edited_diffs_against_the_approved_revision() {
    let mut app = full_app();
    select_draft(&mut app, 13);
    let text = snap("approvals_edited_after_approval_100x30", &mut app, 100, 30);
    // Against the approved revision (price 99), not merely the previous one.
    assert!(text.contains("since the approved revision 1"), "{text}");
    assert!(text.contains("-   \"price\": 99,"), "{text}");
    assert!(text.contains("[edited]"), "{text}");
}

#[test]
fn approvals_drifted_facts() {
    let mut app = full_app();
    select_draft(&mut app, 14);
    let text = snap("approvals_drifted_100x30", &mut app, 100, 30);
    assert!(text.contains("1 of 2 facts changed"), "{text}");
}

#[test]
fn approvals_failed_recheck_is_not_no_drift() {
    let mut app = full_app();
    select_draft(&mut app, 15);
    let text = snap("approvals_recheck_failed_100x30", &mut app, 100, 30);
    assert!(text.contains("could not check facts"), "{text}");
}

#[test]
fn approvals_suspicious_payload_is_marked() {
    let mut app = full_app();
    select_draft(&mut app, 16);
    let text = snap("approvals_suspicious_100x30", &mut app, 100, 30);
    assert!(text.contains("<U+202E>"), "{text}");
    assert!(text.contains("<U+200B>"), "{text}");
}

/// AC9: a payload of megabytes was laid out and diffed in the pane every frame, which
/// held the screen at full CPU. The pane shows how long it is and, for a revision, what
/// changed with a few lines around it, found once, however deep in it the change is
/// (AJ4); for a first revision its start as written. Hostile text stays visible.
#[test]
fn a_payload_too_long_for_the_pane_shows_what_changed_or_its_start() {
    let body = |changed: &str| {
        let mut text = "\u{202E}Dear Lee,\n".to_owned();
        for n in 0..40_000 {
            if n == 30_000 {
                text.push_str(changed);
            } else {
                text.push_str(&format!("line {n} of a long letter\n"));
            }
        }
        text
    };
    let draft = |revisions: Vec<Revision>| {
        let mut d = base_draft(
            40,
            "sha256:long",
            20 * MIN,
            json!({"channel": "email", "to": "lee@example.com", "intent": "long-letter"}),
        );
        d.revision = revisions.len() as i64;
        d.revisions = revisions;
        d
    };
    let first = revision(
        1,
        20 * MIN,
        json!({"body": body("line 30000 of a long letter\n")}),
        json!({}),
    );
    let second = revision(
        2,
        10 * MIN,
        json!({"body": body("\u{202E}TRANSFER ALL FUNDS TO 666\n")}),
        json!({}),
    );
    let long = second.payload.len();
    assert!(long > 1_000_000, "{long}");
    let revised = draft(vec![first.clone(), second]);
    // The pager leads with the changes too, before every line of it.
    let paged = send_once::ui::page::draft_text(&revised, Some(1));
    let changes = paged
        .find("What changed (+1 -1 lines since revision 1)")
        .unwrap();
    let found = paged.find("TRANSFER ALL FUNDS").unwrap();
    assert!(found > changes && found < 2_000, "{}", &paged[..2_000]);
    let mut app = loaded_app(vec![revised], Vec::new(), Vec::new());
    let text = snap("approvals_payload_too_long_100x30", &mut app, 100, 30);
    assert!(
        text.contains(&format!(
            "Payload: {} KiB, +1 -1 since revision 1",
            long.div_ceil(1024)
        )),
        "{text}"
    );
    assert!(text.contains("TRANSFER ALL FUNDS TO 666"), "{text}");
    assert!(text.contains("<U+202E>"), "{text}");
    assert!(!text.contains('\u{202E}'), "{text}");

    let mut app = loaded_app(vec![draft(vec![first])], Vec::new(), Vec::new());
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("KiB, more than this pane shows"), "{text}");
    assert!(text.contains("<U+202E>Dear Lee"), "{text}");

    // A payload on one line shows its first 64 KiB, not the first 4096 characters
    // that one line of other text is cut at.
    let one_line = format!("{}MARKER{}", "x".repeat(20_000), "y".repeat(80_000));
    let mut d = draft(vec![revision(
        1,
        20 * MIN,
        json!({"body": one_line}),
        json!({}),
    )]);
    d.id = 41;
    let mut app = loaded_app(vec![d], Vec::new(), Vec::new());
    let found = (0..2_000u16).step_by(20).any(|scroll| {
        app.detail_scroll = scroll;
        screen(&mut app, 100, 30).contains("MARKER")
    });
    assert!(found, "the text at 20,000 characters is in the pane");
}

#[test]
fn approvals_filtered_list_names_its_filter() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "example");
    // While typing, the status line is the filter being typed.
    let typing = screen(&mut app, 100, 30);
    assert!(typing.contains(" filter: example"), "{typing}");
    for _ in 0.."example".len() {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "refund");
    key(&mut app, KeyCode::Enter);
    snap("approvals_filtered_100x30", &mut app, 100, 30);
}

#[test]
fn approvals_no_match_for_the_filter() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "zzz");
    key(&mut app, KeyCode::Enter);
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("No draft matches the filter"), "{text}");
    assert!(
        text.contains("filter: zzz"),
        "the title keeps the filter: {text}"
    );
}

// ---------------------------------------------------------------------------------
// Snapshots: Unknown sends

#[test]
fn unknown_sends_100x30() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    let text = snap("unknown_oldest_100x30", &mut app, 100, 30);
    // Only the send claimed 2 minutes ago (under --older-than 5m) may still be in flight.
    assert_eq!(text.matches("[in flight?]").count(), 1, "{text}");
    assert!(
        text.contains("␛"),
        "the error's ESC is shown as a mark: {text}"
    );
}

#[test]
fn unknown_send_in_flight_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('G'));
    let text = snap("unknown_in_flight_80x24", &mut app, 80, 24);
    assert!(text.contains("it may still be"), "{text}");
}

// ---------------------------------------------------------------------------------
// Snapshots: Ledger

#[test]
fn ledger_all_100x30() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    snap("ledger_all_100x30", &mut app, 100, 30);
}

#[test]
fn ledger_resolved_entry_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('G'));
    snap("ledger_resolved_80x24", &mut app, 80, 24);
}

#[test]
fn ledger_with_status_filter() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('t'));
    key(&mut app, KeyCode::Char('t'));
    assert_eq!(app.ledger_status, Some(Status::Sent));
    let loading = screen(&mut app, 100, 30);
    assert!(loading.contains("Loading…"), "{loading}");
    let sent: Vec<Entry> = ledger_entries()
        .into_iter()
        .filter(|e| e.status() == Status::Sent)
        .collect();
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(sent),
    });
    snap("ledger_status_sent_100x30", &mut app, 100, 30);
}

#[test]
fn ledger_with_search() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "order-7");
    key(&mut app, KeyCode::Enter);
    let found: Vec<Entry> = ledger_entries()
        .into_iter()
        .filter(|e| e.key().contains("order-7"))
        .collect();
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(found),
    });
    snap("ledger_search_100x30", &mut app, 100, 30);
}

#[test]
fn ledger_search_with_no_entries() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "nothing");
    key(&mut app, KeyCode::Enter);
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(vec![]),
    });
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("filter: nothing"), "{text}");
    assert!(
        text.contains("No entry matches the search (it looks at key, recipient"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------
// Snapshots: overlays

#[test]
fn help_overlay_100x30() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('?'));
    // Every key fits at this size; the last line is clipped at "Esc, ? o" (see
    // help_overlay_shows_every_key_and_how_to_close_it_at_80x24).
    snap("help_approvals_100x30", &mut app, 100, 30);
}

#[test]
fn help_overlay_shows_every_key_and_how_to_close_it_at_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('?'));
    let terminal = draw_with(&mut app, 80, 24, &Theme::new(false));
    let buffer = terminal.backend().buffer();
    // Every binding of the view, and the mouse, on one screen.
    let mut wants: Vec<String> = keymap::help(View::Approvals)
        .into_iter()
        .flat_map(|(_, items)| items)
        .map(|(key, label)| format!("{key:<9}{label}"))
        .collect();
    wants.push("Esc, ? or q closes this.".into());
    for want in wants {
        assert!(
            on_screen(buffer, &want),
            "{want:?}:\n{}",
            buffer_text(buffer)
        );
    }
}

#[test]
fn approve_form() {
    let mut app = full_app();
    select_draft(&mut app, 11);
    key(&mut app, KeyCode::Char('a'));
    keys(&mut app, "checked the amount");
    snap("approve_form_100x30", &mut app, 100, 30);
}

#[test]
fn approve_form_with_an_error_80x24() {
    let mut app = full_app();
    select_draft(&mut app, 11);
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Tab);
    for _ in 0..3 {
        key(&mut app, KeyCode::Backspace);
    }
    // A short error: a long one is cut (see a_form_error_is_shown_whole).
    keys(&mut app, "0s");
    key(&mut app, KeyCode::Enter);
    let text = snap("approve_form_bad_ttl_80x24", &mut app, 80, 24);
    assert!(text.contains("✗ TTL must be longer than zero."), "{text}");
}

#[test]
fn reject_form() {
    let mut app = full_app();
    select_draft(&mut app, 12);
    key(&mut app, KeyCode::Char('r'));
    keys(&mut app, "fee not agreed");
    snap("reject_form_100x30", &mut app, 100, 30);
}

#[test]
fn mark_sent_form() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('s'));
    keys(&mut app, "in the provider's log");
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    keys(&mut app, "msg_81");
    snap("mark_sent_form_100x30", &mut app, 100, 30);
}

#[test]
fn confirm_overlay_for_a_drifted_draft() {
    let mut app = full_app();
    select_draft(&mut app, 14);
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Enter);
    let text = snap("confirm_approve_drifted_100x30", &mut app, 100, 30);
    assert!(text.contains("Enter/y confirm"), "{text}");
}

#[test]
fn confirm_overlay_for_mark_failed_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('f'));
    keys(&mut app, "bounced");
    key(&mut app, KeyCode::Enter);
    snap("confirm_mark_failed_80x24", &mut app, 80, 24);
}

#[test]
fn confirm_overlay_for_a_suspicious_draft_asks_for_y() {
    let mut app = full_app();
    select_draft(&mut app, 16);
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Enter);
    let text = snap("confirm_suspicious_100x30", &mut app, 100, 30);
    assert!(text.contains("Press y"), "{text}");
    assert!(text.contains("y confirm · Esc/n cancel"), "{text}");
    assert!(!text.contains("Enter/y confirm"), "{text}");
}

// ---------------------------------------------------------------------------------
// Snapshots: status line, empty states, too small

#[test]
fn status_line_with_an_error() {
    let mut app = full_app();
    select_draft(&mut app, 13);
    app.update(Action::Done(Outcome::Refused {
        subject: "draft 13".into(),
        why: "Draft 13 was already approved by lee at 2026-09-27T11:58:00.000Z; nothing changed."
            .into(),
    }));
    let text = snap("status_error_100x30", &mut app, 100, 30);
    assert!(
        text.contains("✗ Draft 13 was already approved by lee"),
        "{text}"
    );
}

#[test]
fn status_line_with_success_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    app.update(Action::Done(Outcome::Resolved {
        key: "order-77:charge".into(),
        status: Status::Sent,
    }));
    let text = screen(&mut app, 80, 24);
    assert!(
        text.contains("✓ Marked order-77:charge sent. It will not be sent again."),
        "{text}"
    );
}

#[test]
fn empty_queue() {
    let mut app = loaded_app(vec![], vec![], vec![]);
    app.update(Action::CountsLoaded(Ok(Census::default())));
    let text = snap("empty_approvals_100x30", &mut app, 100, 30);
    assert!(text.contains("Nothing waiting for review."), "{text}");
    key(&mut app, KeyCode::Char('2'));
    let text = snap("empty_unknown_80x24", &mut app, 80, 24);
    assert!(text.contains("No unknown sends"), "{text}");
}

#[test]
fn jsonl_ledger_has_no_queue() {
    let why = "/srv/billing/ledger.jsonl is a JSON Lines ledger. The review queue lives in SQLite ledgers (a .db file), so there is nothing to approve here; unknown sends and the ledger are in views 2 and 3.";
    let mut app = empty_app(Some(why));
    app.ledger_label = "/srv/billing/ledger.jsonl".into();
    app.update(Action::UnknownLoaded(Ok(unknown())));
    app.update(Action::CountsLoaded(Ok(census())));
    // There is nothing to review in such a ledger: it opens where the work is.
    assert_eq!(app.view, View::Unknown);
    key(&mut app, KeyCode::Char('1'));
    let text = snap("no_queue_jsonl_80x24", &mut app, 80, 24);
    assert!(text.contains("nothing to approve here"), "{text}");
}

#[test]
fn loading() {
    let mut app = empty_app(None);
    let text = snap("loading_100x30", &mut app, 100, 30);
    assert!(text.contains("Loading…"), "{text}");
    assert!(text.contains("counting…"), "{text}");
}

#[test]
fn a_failed_load_says_why() {
    let mut app = empty_app(None);
    app.update(Action::ApprovalsLoaded(Err("database is locked".into())));
    app.update(Action::CountsLoaded(Err("disk I/O error".into())));
    let text = screen(&mut app, 80, 24);
    assert!(
        text.contains("Could not load: database is locked"),
        "{text}"
    );
    assert!(text.contains("could not count: disk I/O error"), "{text}");
}

#[test]
fn too_small() {
    let mut app = full_app();
    let text = snap("too_small_50x12", &mut app, 50, 12);
    assert!(text.contains("send-once needs at least 64×18."), "{text}");
    assert!(text.contains("This terminal is 50×12."), "{text}");
    // One column or row short is still too small; the minimum itself is enough.
    assert!(screen(&mut app, 63, 18).contains("needs at least"));
    assert!(screen(&mut app, 64, 17).contains("needs at least"));
    assert!(!screen(&mut app, 64, 18).contains("needs at least"));
}

#[test]
fn every_screen_draws_at_the_minimum_and_in_tiny_terminals() {
    // A panic while drawing leaves the terminal to the panic hook; no size may cause one.
    for (w, h) in [(64, 18), (1, 1), (0, 0), (200, 60), (64, 80), (300, 18)] {
        let preparations: [fn(&mut App); 6] = [
            |_: &mut App| {},
            |a: &mut App| key(a, KeyCode::Char('?')),
            |a: &mut App| {
                key(a, KeyCode::Char('a'));
                key(a, KeyCode::Enter);
            },
            |a: &mut App| key(a, KeyCode::Char('r')),
            |a: &mut App| key(a, KeyCode::Char('2')),
            |a: &mut App| key(a, KeyCode::Char('3')),
        ];
        for prepare in preparations {
            let mut app = full_app();
            select_draft(&mut app, 16);
            prepare(&mut app);
            screen(&mut app, w, h);
        }
    }
}

#[test]
fn the_footer_shows_how_to_quit_at_80_columns() {
    for view in ['1', '2', '3'] {
        let mut app = full_app();
        key(&mut app, KeyCode::Char(view));
        let text = screen(&mut app, 80, 24);
        let footer = text.lines().last().unwrap();
        assert!(footer.contains("q quit"), "view {view}: {footer:?}");
    }
}

#[test]
fn a_form_error_is_shown_whole() {
    let mut app = full_app();
    select_draft(&mut app, 11);
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Tab);
    for _ in 0..3 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "soon");
    key(&mut app, KeyCode::Enter);
    let error = send_once::ledger::duration::parse_duration("soon")
        .unwrap_err()
        .to_string();
    let terminal = draw_with(&mut app, 100, 30, &Theme::new(false));
    let buffer = terminal.backend().buffer();
    // Compared without spaces: where a wrap falls is the view's business.
    let squeeze = |s: &str| s.replace(' ', "");
    let want = squeeze(&format!("TTL: {error}"));
    assert!(
        pane_texts(buffer)
            .iter()
            .any(|p| squeeze(p).contains(&want)),
        "{want:?}:\n{}",
        buffer_text(buffer)
    );
}

#[test]
fn a_long_payload_does_not_silently_hide_its_end() {
    let mut long = base_draft(31, "long-1", HOUR, json!({"to": "x@example.com"}));
    let payload: Map<String, Value> = (0..40)
        .map(|i| (format!("field{i:02}"), json!(i)))
        .collect();
    long.revisions = vec![revision(
        1,
        HOUR,
        Value::Object(payload),
        json!({"balance": 1}),
    )];
    long.latest = checked(json!({"balance": 2}), MIN);
    let mut app = loaded_app(vec![long], vec![], vec![]);
    let text = screen(&mut app, 100, 30);
    let end_shown = text.contains("\"field39\": 39") && text.contains("1 of 1 fact changed");
    let cut_said = text.contains("more") || text.contains('↓');
    assert!(end_shown || cut_said, "{text}");
}

// ---------------------------------------------------------------------------------
// Styles: what colour and modifiers carry

/// The cells of the first row holding `text`, with their x positions.
fn find(buffer: &Buffer, text: &str) -> (u16, u16) {
    for (y, line) in buffer_lines(buffer).iter().enumerate() {
        if let Some(byte) = line.find(text) {
            let x = line[..byte].chars().count();
            return (x as u16, y as u16);
        }
    }
    panic!("{text:?} not on screen:\n{}", buffer_text(buffer));
}

#[test]
fn the_selected_row_is_reversed_with_and_without_colour() {
    for colour in [true, false] {
        let mut app = full_app();
        select_draft(&mut app, 14);
        let terminal = draw_with(&mut app, 100, 30, &Theme::new(colour));
        let buffer = terminal.backend().buffer();
        let (x, y) = find(buffer, "▶ ");
        // The whole row, text included, so the selection shows on any terminal.
        let (tx, _) = find(buffer, "di@example.com");
        for cx in [x, x + 1, tx, tx + 3] {
            assert!(
                buffer[(cx, y)].modifier.contains(Modifier::REVERSED),
                "colour={colour}: cell ({cx},{y}) {:?}",
                buffer[(cx, y)]
            );
        }
        // An unselected row is not reversed.
        let (ux, uy) = find(buffer, "ana@example.com");
        assert_ne!(uy, y);
        assert!(!buffer[(ux, uy)].modifier.contains(Modifier::REVERSED));
    }
}

#[test]
fn a_drift_badge_is_yellow_with_colour_and_plain_without() {
    let mut app = full_app();
    // Selected rows are reversed and lose their colours; look at an unselected row.
    select_draft(&mut app, 11);
    let terminal = draw_with(&mut app, 100, 30, &Theme::new(true));
    let buffer = terminal.backend().buffer();
    let (x, y) = find(buffer, "[drift]");
    assert_eq!(buffer[(x, y)].fg, Color::Yellow, "{:?}", buffer[(x, y)]);
    assert_eq!(buffer[(x + 6, y)].fg, Color::Yellow);

    let terminal = draw_with(&mut app, 100, 30, &Theme::new(false));
    let buffer = terminal.backend().buffer();
    let (x, y) = find(buffer, "[drift]");
    assert_eq!(buffer[(x, y)].fg, Color::Reset, "{:?}", buffer[(x, y)]);
}

#[test]
fn without_colour_no_cell_has_a_colour() {
    // NO_COLOR: only modifiers may carry meaning.
    let preparations: [fn(&mut App); 4] = [
        |_: &mut App| {},
        |a: &mut App| key(a, KeyCode::Char('2')),
        |a: &mut App| key(a, KeyCode::Char('3')),
        |a: &mut App| {
            key(a, KeyCode::Char('a'));
            key(a, KeyCode::Enter);
        },
    ];
    for prepare in preparations {
        let mut app = full_app();
        select_draft(&mut app, 16);
        prepare(&mut app);
        let terminal = draw_with(&mut app, 100, 30, &Theme::new(false));
        for cell in terminal.backend().buffer().content() {
            assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset), "{cell:?}");
        }
    }
}

// ---------------------------------------------------------------------------------
// Hostile text: every sequence of the reliability corpus, everywhere untrusted text is

const CORPUS: &[(&str, &str)] = &[
    ("CSI 2J", "\u{1b}[2J"),
    ("CSI A", "\u{1b}[A"),
    ("CSI 6n", "\u{1b}[6n"),
    ("OSC 0", "\u{1b}]0;title\u{7}"),
    ("OSC 8", "\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
    ("OSC 52", "\u{1b}]52;c;SGk=\u{7}"),
    ("DCS", "\u{1b}P1$tx\u{1b}\\"),
    ("APC", "\u{1b}_Gq=1\u{1b}\\"),
    ("ESC c", "\u{1b}c"),
    ("BEL", "\u{7}"),
    ("BS", "abc\u{8}\u{8}"),
    ("CR", "safe\rEVIL"),
    ("lone ESC", "\u{1b}"),
    ("C1 CSI", "\u{9b}2J"),
    ("C1 OSC", "\u{9d}0;t\u{9c}"),
    ("LRE", "\u{202a}"),
    ("RLE", "\u{202b}"),
    ("PDF", "\u{202c}"),
    ("LRO", "\u{202d}"),
    ("RLO", "\u{202e}"),
    ("LRI", "\u{2066}"),
    ("RLI", "\u{2067}"),
    ("FSI", "\u{2068}"),
    ("PDI", "\u{2069}"),
    ("LRM", "\u{200e}"),
    ("RLM", "\u{200f}"),
    ("ALM", "\u{61c}"),
    ("ZWSP", "\u{200b}"),
    ("ZWNJ", "\u{200c}"),
    ("ZWJ", "\u{200d}"),
    ("WJ", "\u{2060}"),
    ("BOM", "\u{feff}"),
    ("SHY", "\u{ad}"),
];

/// What must never be in a cell: C0 and C1 controls, DEL, and the characters that
/// reorder or hide text.
fn forbidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200b}'..='\u{200f}'
                | '\u{061c}'
                | '\u{2060}'
                | '\u{feff}'
                | '\u{00ad}'
        )
}

/// The visible mark each character becomes: a control picture for C0 (␛ for ESC),
/// `<U+` and the code point's hex digits `>` for the rest (`<U+202E>`).
fn marked(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap().to_string(),
            c if forbidden(c) => format!("<U+{:04X}>", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// As a JSON string shows it (payloads are drawn as JSON): JSON.stringify's escapes for
/// C0, marks for what JSON leaves raw.
fn json_marked(text: &str) -> String {
    let json = serde_json::to_string(text).unwrap();
    let inner = &json[1..json.len() - 1];
    marked(inner)
}

/// The text of every pane, each as one string: the cells between two vertical borders,
/// row after row, so that text a pane wrapped reads as one (the strings looked for
/// hold no spaces, where a wrap could fall).
fn pane_texts(buffer: &Buffer) -> Vec<String> {
    let lines: Vec<Vec<String>> = buffer_lines(buffer)
        .iter()
        .map(|l| l.chars().map(String::from).collect())
        .collect();
    let mut strips: Vec<(usize, usize)> = Vec::new();
    for row in &lines {
        let borders: Vec<usize> = (0..row.len()).filter(|&x| row[x] == "│").collect();
        for pair in borders.windows(2) {
            if !strips.contains(&(pair[0], pair[1])) {
                strips.push((pair[0], pair[1]));
            }
        }
    }
    strips
        .into_iter()
        .map(|(left, right)| {
            lines
                .iter()
                .filter(|row| row[left] == "│" && row[right] == "│")
                .map(|row| row[left + 1..right].concat().trim_end().to_owned())
                .collect()
        })
        .collect()
}

fn on_screen(buffer: &Buffer, want: &str) -> bool {
    buffer_text(buffer).contains(want)
        || pane_texts(buffer).iter().any(|p| p.contains(want))
        || diff_texts(buffer).iter().any(|p| p.contains(want))
}

/// Like [`pane_texts`], with each row's diff marker and indent taken off, so that a
/// diff line wrapped with its `+`/`-` repeated on each row reads as one.
fn diff_texts(buffer: &Buffer) -> Vec<String> {
    let lines = buffer_lines(buffer);
    let mut out = Vec::new();
    for strip in 0..pane_texts(buffer).len() {
        let mut text = String::new();
        for line in &lines {
            let cells: Vec<char> = line.chars().collect();
            let borders: Vec<usize> = (0..cells.len()).filter(|&x| cells[x] == '│').collect();
            if let Some(pair) = borders.windows(2).nth(strip) {
                let row: String = cells[pair[0] + 1..pair[1]].iter().collect();
                text.push_str(row.trim_start_matches(['+', '-']).trim());
            }
        }
        out.push(text);
    }
    out
}

fn assert_clean(buffer: &Buffer, label: &str, place: &str) {
    for (y, line) in buffer_lines(buffer).iter().enumerate() {
        if let Some(c) = line.chars().find(|c| forbidden(*c)) {
            panic!(
                "{label} in {place}: U+{:04X} drawn raw on row {y}:\n{}",
                c as u32,
                buffer_text(buffer).escape_debug()
            );
        }
    }
}

fn hostile_app(seq: &str) -> App {
    let mut draft = base_draft(
        21,
        &format!("key{seq}k"),
        HOUR,
        json!({"to": format!("meta{seq}x"), "intent": "promo"}),
    );
    draft.submitted_by = Some(format!("agent{seq}a"));
    draft.revisions = vec![
        revision(
            1,
            HOUR,
            json!({"body": "hello"}),
            json!({"plan": format!("fact{seq}f")}),
        ),
        revision(
            2,
            HOUR,
            json!({"body": format!("pay{seq}load")}),
            json!({"plan": format!("fact{seq}f")}),
        ),
    ];
    draft.revision = 2;
    draft.latest = LatestFacts {
        facts: Some(obj(json!({"plan": "pro"}))),
        checked_at: Some(ago(MIN)),
        error: Some(format!("recheck{seq}r")),
    };
    // Without meta, a draft's list row is its key.
    let mut bare = base_draft(22, &format!("bare{seq}k"), HOUR, json!({}));
    bare.meta = None;
    bare.revisions = vec![revision(1, HOUR, json!({"n": 1}), json!({}))];
    let settled = Entry::from_value(json!({
        "key": "settled-1",
        "status": "sent",
        "attempts": 1,
        "claimedAt": ago(2 * HOUR),
        "resolution": {"status": "sent", "by": format!("by{seq}b"), "at": ago(HOUR), "note": format!("note{seq}n")},
    }))
    .unwrap();
    let unknown = Entry::from_value(json!({
        "key": format!("key{seq}k"),
        "status": "pending",
        "attempts": 2,
        "claimedAt": ago(HOUR),
        "updatedAt": ago(HOUR),
        "error": format!("err{seq}e"),
        "providerId": format!("pid{seq}p"),
        "meta": {"to": format!("meta{seq}x")},
    }))
    .unwrap();
    let mut app = loaded_app(
        vec![draft, bare],
        vec![unknown.clone()],
        vec![unknown, settled],
    );
    app.ledger_label = format!("/tmp/led{seq}ger.db");
    app
}

/// A screen to draw: its name, the keys that lead there, and the text it must show.
type Place<'a> = (&'a str, fn(&mut App), &'a [String]);

#[test]
fn hostile_text_is_never_drawn_raw_and_always_shown_as_a_mark() {
    for (label, seq) in CORPUS {
        let shown = marked(seq);
        // The reason each view is drawn, and where in it the sequence must show.
        let places: &[Place] = &[
            (
                "approvals",
                |_| {},
                &[
                    format!("meta{shown}x"),
                    format!("agent{shown}a"),
                    format!("\"pay{}load\"", json_marked(seq)),
                    format!("recheck{shown}r"),
                    format!("led{shown}ger"),
                ],
            ),
            (
                "unknown",
                |a| key(a, KeyCode::Char('2')),
                &[
                    format!("key{shown}k"),
                    format!("err{shown}e"),
                    format!("pid{shown}p"),
                    format!("meta{shown}x"),
                ],
            ),
            (
                "ledger",
                |a| key(a, KeyCode::Char('3')),
                &[format!("key{shown}k"), format!("pid{shown}p")],
            ),
            (
                "mark-sent form",
                |a| {
                    key(a, KeyCode::Char('2'));
                    key(a, KeyCode::Char('s'));
                },
                &[format!("key{shown}k")],
            ),
            (
                "mark-failed confirm",
                |a| {
                    key(a, KeyCode::Char('2'));
                    key(a, KeyCode::Char('f'));
                    key(a, KeyCode::Enter);
                },
                &[format!("key{shown}k")],
            ),
            (
                "approve confirm",
                |a| {
                    key(a, KeyCode::Char('a'));
                    key(a, KeyCode::Enter);
                },
                &[],
            ),
            ("help", |a| key(a, KeyCode::Char('?')), &[]),
            (
                "approvals, a draft without meta",
                |a| key(a, KeyCode::Char('G')),
                &[],
            ),
            (
                "ledger, a resolved entry",
                |a| {
                    key(a, KeyCode::Char('3'));
                    key(a, KeyCode::Char('G'));
                },
                &[format!("note{shown}n"), format!("by{shown}b")],
            ),
        ];
        for (place, prepare, expected) in places {
            let mut app = hostile_app(seq);
            prepare(&mut app);
            for (w, h) in [(100, 30), (80, 24)] {
                let terminal = draw_with(&mut app, w, h, &Theme::new(true));
                let buffer = terminal.backend().buffer();
                assert_clean(buffer, label, place);
                if (w, h) != (100, 30) {
                    continue;
                }
                for want in *expected {
                    assert!(
                        on_screen(buffer, want),
                        "{label} in {place}: {want:?} not on screen:\n{}",
                        buffer_text(buffer)
                    );
                }
            }
        }
    }
}

#[test]
fn both_checks_can_fail_on_text_drawn_raw() {
    // Drawn raw, ratatui drops most of these characters (so "no raw character" alone
    // would pass) but glues ZWJ and ZWNJ to the cell before them. The in-place mark
    // check catches the dropping, the cell check the gluing.
    use ratatui::widgets::{Paragraph, Widget};
    let raw_draw = |text: &str| {
        let mut buffer = Buffer::empty(ratatui::layout::Rect::new(0, 0, 30, 1));
        Paragraph::new(text.to_owned()).render(buffer.area, &mut buffer);
        buffer
    };
    for seq in ["\u{202e}", "\u{200b}", "\u{1b}[2J", "\u{9b}2J", "\r"] {
        let buffer = raw_draw(&format!("pay{seq}load"));
        assert!(!on_screen(&buffer, &format!("pay{}load", marked(seq))));
    }
    for seq in ["\u{200d}", "\u{200c}"] {
        let buffer = raw_draw(&format!("pay{seq}load"));
        let caught = std::panic::catch_unwind(|| assert_clean(&buffer, "raw", "a bare paragraph"));
        assert!(caught.is_err(), "{seq:?} drawn raw went unnoticed");
    }
}

#[test]
fn hostile_text_in_a_status_message_and_a_load_error() {
    for (label, seq) in CORPUS {
        let mut app = empty_app(None);
        app.update(Action::ApprovalsLoaded(Err(format!("locked{seq}l"))));
        app.update(Action::CountsLoaded(Err(format!("count{seq}c"))));
        app.update(Action::Done(Outcome::Refused {
            subject: String::new(),
            why: format!("done{seq}d"),
        }));
        let terminal = draw_with(&mut app, 100, 30, &Theme::new(true));
        let buffer = terminal.backend().buffer();
        assert_clean(buffer, label, "status line");
        let shown = marked(seq);
        for want in [
            format!("done{shown}d"),
            format!("locked{shown}l"),
            format!("count{shown}c"),
        ] {
            assert!(
                on_screen(buffer, &want),
                "{label}: {want:?} not on screen:\n{}",
                buffer_text(buffer)
            );
        }
    }
}

#[test]
fn a_hostile_line_break_in_an_error_is_kept_as_a_line_break() {
    // Multi-line errors (a command's stderr) keep their lines; nothing else is raw.
    let mut app = hostile_app("\u{1b}[2J");
    key(&mut app, KeyCode::Char('2'));
    app.unknown = send_once::ui::app::Loaded::Ready(vec![
        Entry::from_value(json!({
            "key": "order-1", "status": "pending", "attempts": 1,
            "claimedAt": ago(HOUR), "error": "first line\n\u{1b}[31msecond\ttabbed",
        }))
        .unwrap(),
    ]);
    let terminal = draw_with(&mut app, 100, 30, &Theme::new(true));
    let buffer = terminal.backend().buffer();
    assert_clean(buffer, "LF", "unknown");
    let lines = buffer_lines(buffer);
    // In the detail pane, under "Last error": two rows, as the error has two lines.
    let heading = lines.iter().position(|l| l.contains("Last error")).unwrap();
    assert!(
        lines[heading + 1].contains("│first line "),
        "{}",
        buffer_text(buffer)
    );
    assert!(
        lines[heading + 2].contains("│␛[31msecond␉tabbed "),
        "{}",
        buffer_text(buffer)
    );
}

// ---------------------------------------------------------------------------------
// The operator's screen: marks and bulk decisions, the Decisions view, live filters,
// sort, diff bases, the fading status, the command line, the mouse, copy, where the
// UI opens, and the honest states (expired, ended, never checked, another tool).

use crate::harness::clock::{MIN, ago, now};
use send_once::ledger::decision::{Decision, DecisionOutcome};
use send_once::ui::action::Effect;
use send_once::ui::app::{Confirm, FormKind, Overlay, STATUS_FADE_MS, Start};

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn ctrl(app: &mut App, c: char) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

fn confirm_of(app: &App) -> &Confirm {
    match &app.overlay {
        Some(Overlay::Confirm(c)) => c,
        other => panic!("no confirmation open: {other:?}"),
    }
}

fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn decision(
    id: i64,
    at: i64,
    by: &str,
    action: &str,
    subject: &str,
    note: Option<&str>,
) -> Decision {
    Decision {
        id: Some(id),
        at: ago(at),
        by: Some(by.into()),
        action: action.into(),
        subject: subject.into(),
        note: note.map(str::to_owned),
        outcome: DecisionOutcome::Changed,
        detail: json!({"from": "pending", "status": "failed"}),
        link: None,
    }
}

fn decisions() -> Vec<Decision> {
    let mut refused = decision(4, MIN, "bob", "resolve", "order-77:charge", None);
    refused.outcome = DecisionOutcome::Refused;
    refused.detail =
        json!({"reason": "changed after it was shown", "to": "mo@example.com", "intent": "charge"});
    let mut approve = decision(
        3,
        20 * MIN,
        "dana",
        "approve",
        "draft:13",
        Some("price checked"),
    );
    approve.detail = json!({"revision": 1});
    vec![
        refused,
        approve,
        decision(
            2,
            HOUR,
            "dana",
            "resolve",
            "newsletter-2026-09",
            Some("bounced \u{1b}[2J"),
        ),
        decision(1, DAY, "lee", "reject", "draft:9", Some("duplicate")),
    ]
}

/// Marks the first three unknown sends (Space marks and moves down).
fn mark_three(app: &mut App) {
    key(app, KeyCode::Char('2'));
    key(app, KeyCode::Char('g'));
    for _ in 0..3 {
        key(app, KeyCode::Char(' '));
    }
}

/// A confirmation's keys keep their row however its lines wrap: wide characters (a
/// CJK name, an emoji) take two columns each, and counted as one they left the box a
/// row short, its key line cut (operator's shift, session 41).
#[test]
fn a_confirmation_of_wide_names_keeps_its_keys_in_view() {
    let wide = |key: &str, who: &str| {
        Entry::from_value(json!({
            "key": key, "status": "pending", "attempts": 1,
            "claimedAt": ago(2 * HOUR), "updatedAt": ago(2 * HOUR),
            "meta": {"to": who, "intent": "请款通知 📨 请款通知 📨 请款通知 📨 请款通知 📨"},
            "error": "timed out", "uncertain": true,
        }))
        .unwrap()
    };
    let unknown = vec![
        wide("k-1", "李小龙-财务部-应付账款@例子.公司.中国"),
        wide("k-2", "王小明-财务部-应付账款@例子.公司.中国"),
    ];
    let mut app = loaded_app(Vec::new(), unknown, Vec::new());
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('g'));
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char('f'));
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.overlay, Some(Overlay::Confirm(_))));
    let text = screen(&mut app, 80, 24);
    // In the box, as well as on the footer.
    assert_eq!(text.matches("Esc/n cancel").count(), 2, "{text}");
}

#[test]
fn space_marks_rows_and_bulk_settle_is_one_form_one_confirmation_one_batch() {
    let mut app = full_app();
    mark_three(&mut app);
    let marked = &app.state(View::Unknown).marked;
    assert_eq!(marked.len(), 3, "{marked:?}");
    assert!(!marked.contains("order-79:charge"));
    let text = snap("unknown_three_marked_100x30", &mut app, 100, 30);
    assert!(text.contains("3 marked"), "{text}");

    assert_eq!(key_effects(&mut app, 'f'), vec![]);
    let Some(Overlay::Form(form)) = &app.overlay else {
        panic!("no form")
    };
    let FormKind::SettleMany { status, sends } = &form.kind else {
        panic!("not a bulk form: {:?}", form.kind)
    };
    assert_eq!(*status, Status::Failed);
    assert_eq!(sends.len(), 3);
    // Each send keeps the attempt the person saw.
    for send in sends {
        assert_eq!(send.seen.status, Status::Pending);
        assert!(send.seen.claimed_at.is_some() && send.seen.attempts.is_some());
    }
    keys(&mut app, "gateway outage, provider log shows none");
    press(&mut app, KeyCode::Enter);
    let confirm = confirm_of(&app);
    assert!(
        confirm.lines[0].starts_with("Mark 3 unknown sends failed as dana?"),
        "{:?}",
        confirm.lines
    );
    let text = snap("bulk_settle_confirm_100x30", &mut app, 100, 30);
    assert!(text.contains("Each is refused on its own"), "{text}");
    screen(&mut app, 80, 24);
    snap("bulk_settle_confirm_80x24", &mut app, 80, 24);

    let effects = key_effects(&mut app, 'y');
    let [Effect::Batch(items)] = effects.as_slice() else {
        panic!("one batch, got {effects:?}")
    };
    assert_eq!(items.len(), 3);
    for item in items {
        let Effect::Resolve {
            status,
            by,
            note,
            seen,
            ..
        } = item
        else {
            panic!("{item:?}")
        };
        assert_eq!(*status, Status::Failed);
        assert_eq!(by, "dana");
        assert_eq!(
            note.as_deref(),
            Some("gateway outage, provider log shows none")
        );
        assert_eq!(seen.status, Status::Pending);
    }
    // The marks stay until the reload shows what was settled: those leave the list,
    // and their marks with it; a refused one would stay marked.
    assert_eq!(app.state(View::Unknown).marked.len(), 3);
    let mut rest = unknown();
    rest.drain(0..2);
    app.update(Action::UnknownLoaded(Ok(rest)));
    assert_eq!(app.state(View::Unknown).marked.len(), 1);
}

/// The bulk confirmation marks which of its sends may still be sending, where it said
/// only how many (operator's shift, session 43: AJ8).
#[test]
fn a_bulk_confirmation_marks_the_sends_that_may_still_be_sending() {
    let mut app = full_app();
    mark_three(&mut app);
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(app.state(View::Unknown).marked.len(), 4);
    key(&mut app, KeyCode::Char('f'));
    press(&mut app, KeyCode::Enter);
    let lines = confirm_of(&app).lines.clone();
    let line = |needle: &str| {
        lines
            .iter()
            .find(|l| l.contains(needle))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        line("order-79:charge").ends_with("? may still be sending"),
        "{lines:?}"
    );
    assert!(
        !line("order-78:charge").contains("may still be sending"),
        "{lines:?}"
    );
}

fn key_effects(app: &mut App, c: char) -> Vec<Effect> {
    press(app, KeyCode::Char(c))
}

#[test]
fn a_bulk_result_says_how_many_were_settled_and_which_were_refused_and_why() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    let effects = app.update(Action::Done(Outcome::Batch(vec![
        Outcome::Resolved {
            key: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            status: Status::Failed,
        },
        Outcome::Refused {
            subject: "order-77:charge".into(),
            why: "order-77:charge changed after it was shown: it is now sent, by bob at 2026-09-27T11:59:00.000Z. Nothing changed.".into(),
        },
        Outcome::Resolved {
            key: "order-78:charge".into(),
            status: Status::Failed,
        },
    ])));
    assert_eq!(effects.len(), 5, "one reload for the batch: {effects:?}");
    let status = app.status.clone().unwrap();
    assert!(!status.ok);
    assert!(
        status.text.starts_with("Marked failed: 2 of 3."),
        "{}",
        status.text
    );
    assert!(
        status
            .text
            .contains("Refused 1: order-77:charge changed after"),
        "{}",
        status.text
    );
    assert!(
        !status.text.contains(".;") && !status.text.contains(".."),
        "{}",
        status.text
    );
    assert!(status.text.contains("by bob"), "{}", status.text);
    // At 80 columns the whole message wraps onto the lines it needs, words whole.
    let text = snap("bulk_settle_result_80x24", &mut app, 80, 24);
    assert!(
        text.contains("by bob at 2026-09-27T11:59:00.000Z."),
        "{text}"
    );
    // Wrapped at a word: the second line starts with one.
    assert!(
        text.lines().any(|l| l.starts_with("it is now sent")),
        "{text}"
    );
}

#[test]
fn ctrl_a_marks_what_the_filter_shows_and_esc_clears_marks_before_the_filter() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "order-7");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_unknown().len(), 3);
    ctrl(&mut app, 'a');
    assert_eq!(app.state(View::Unknown).marked.len(), 3);
    ctrl(&mut app, 'a');
    assert!(
        app.state(View::Unknown).marked.is_empty(),
        "pressed again, it unmarks"
    );
    ctrl(&mut app, 'a');
    press(&mut app, KeyCode::Esc);
    assert!(app.state(View::Unknown).marked.is_empty());
    assert_eq!(app.filter(View::Unknown), "order-7", "the marks went first");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.filter(View::Unknown), "");
}

#[test]
fn marked_drafts_are_rejected_with_one_reason_but_approving_stays_one_at_a_time() {
    let mut app = full_app();
    select_draft(&mut app, 16);
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(key_effects(&mut app, 'a'), vec![]);
    assert!(app.overlay.is_none());
    assert!(
        status_text(&app).contains("one draft at a time"),
        "{}",
        status_text(&app)
    );
    key(&mut app, KeyCode::Char('r'));
    keys(&mut app, "campaign cancelled");
    press(&mut app, KeyCode::Enter);
    let asked = &confirm_of(&app).lines[0];
    // Each by its number and who it goes to (AG9).
    assert!(
        asked.starts_with("Reject 2 drafts as dana: 16 (") && asked.contains("), 15 ("),
        "{asked}"
    );
    let effects = key_effects(&mut app, 'y');
    let [Effect::Batch(items)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let ids: Vec<i64> = items
        .iter()
        .map(|e| match e {
            Effect::Reject { id, reason, .. } => {
                assert_eq!(reason, "campaign cancelled");
                *id
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, vec![16, 15]);
}

#[test]
fn marks_of_what_someone_else_settled_are_dropped_on_reload() {
    let mut app = full_app();
    mark_three(&mut app);
    let mut rest = unknown();
    rest.remove(1);
    app.update(Action::UnknownLoaded(Ok(rest)));
    assert_eq!(app.state(View::Unknown).marked.len(), 2);
}

#[test]
fn the_decisions_view_lists_the_log_newest_first_and_filters_as_typed() {
    let mut app = full_app();
    app.update(Action::DecisionsLoaded(Ok(decisions())));
    key(&mut app, KeyCode::Char('4'));
    assert_eq!(app.view, View::Decisions);
    let text = snap("decisions_100x30", &mut app, 100, 30);
    assert!(text.contains("4 Decisions (4)"), "{text}");
    assert!(!text.contains('\u{1b}'));
    snap("decisions_80x24", &mut app, 80, 24);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "dana");
    assert_eq!(app.visible_decisions().len(), 2, "live, by who");
    press(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "refused");
    assert_eq!(app.visible_decisions().len(), 1, "by outcome");
    keys(&mut app, "zz");
    let text = screen(&mut app, 100, 30);
    assert!(
        text.contains("filter: refusedzz"),
        "the title keeps it: {text}"
    );
    assert!(text.contains("No decision matches the filter"), "{text}");
}

/// Each row of the log says who decided what about which send, from the decision
/// itself (operator's shift, session 42: AG3–AG5): a submission names its draft and
/// recipient before its send has an entry, an edit what it changed of the recipient, a
/// refusal what was asked, a reset what it undid, and the ledger's own completion what
/// made it; and the filter finds a row by what it shows.
#[test]
fn a_decision_row_says_who_decided_what_about_which_send() {
    let mut app = full_app();
    let mut submit = decision(
        10,
        5 * MIN,
        "billing-agent",
        "submit",
        "9603c7a81754aa",
        None,
    );
    submit.detail =
        json!({"draft": 3, "revision": 1, "to": "dee@example.com", "intent": "invoice-overdue"});
    let mut edit = decision(11, 4 * MIN, "dana", "edit", "draft:8", None);
    edit.detail = json!({"from": "queued", "to": "pat@example.com", "toAfter": "pam@example.com", "intent": "wire", "intentAfter": "wire-2"});
    let mut refused = decision(12, 3 * MIN, "olly", "resolve", "k-refused", None);
    refused.outcome = DecisionOutcome::Refused;
    refused.detail = json!({"from": "failed", "status": "sent", "to": "ivy@example.com"});
    let mut reset = decision(13, 2 * MIN, "sam", "reset", "k-reset", None);
    reset.detail = json!({"from": "sent", "force": true, "to": "fay@example.com"});
    let mut completed = decision(14, MIN, "x", "completed", "k-done", None);
    completed.by = None;
    completed.detail = json!({"from": "pending", "status": "sent", "to": "gus@example.com"});
    app.update(Action::DecisionsLoaded(Ok(vec![
        completed, reset, refused, edit, submit,
    ])));
    key(&mut app, KeyCode::Char('4'));
    let text = screen(&mut app, 160, 30);
    let row = |needle: &str| {
        text.lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no row with {needle}: {text}"))
            .to_owned()
    };
    assert!(row("submit").contains("draft 3 dee@example.com"), "{text}");
    assert!(
        row(" edit ").contains("pat@example.com→pam@example.com · wire→wire-2"),
        "{text}"
    );
    assert!(row("olly").contains("sent REFUSED"), "{text}");
    assert!(row(" reset ").contains("sent→failed"), "{text}");
    assert!(row("completed").contains("its own send"), "{text}");
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "dee@");
    assert_eq!(app.visible_decisions().len(), 1, "found by its recipient");
}

/// N10: the Decisions list names its columns, says what each decision changed (not
/// "changed" on every row), and a wide terminal gives the subject room.
#[test]
fn the_decisions_list_has_column_names_outcomes_and_a_wide_subject() {
    let mut app = full_app();
    app.update(Action::DecisionsLoaded(Ok(decisions())));
    key(&mut app, KeyCode::Char('4'));
    let text = snap("decisions_160x30", &mut app, 160, 30);
    let rows: Vec<&str> = text.lines().collect();
    assert!(
        rows[3].contains("when") && rows[3].contains("who") && rows[3].contains("outcome"),
        "{text}"
    );
    for word in ["REFUSED", "approved", "pending→failed", "rejected"] {
        assert!(text.contains(word), "{word}: {text}");
    }
    assert!(
        rows[4..8].iter().all(|r| !r.contains(" changed ")),
        "{text}"
    );
    assert!(text.contains("draft 13 cy@example.com · renewal"), "{text}");
}

/// N10: `:` and Tab on an empty line list what fits and say how many more, never a
/// name cut in the middle, and the keys stay on the row.
#[test]
fn the_command_line_lists_what_fits_and_how_many_more() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char(':'));
    press(&mut app, KeyCode::Tab);
    let text = screen(&mut app, 80, 24);
    let row = text
        .lines()
        .find(|l| l.contains("Tab complete"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("more (type a letter)"), "{row}");
    assert!(row.ends_with("Esc cancel"), "{row}");
    let names: Vec<&str> = row.trim().split(" +").next().unwrap().split(' ').collect();
    let all = send_once::ui::keymap::completions(app.view, "");
    for name in names {
        assert!(all.contains(&name), "{name:?} is a whole name: {row}");
    }
}

#[test]
fn an_items_history_shows_its_decisions_and_what_another_tool_wrote() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('G'));
    // order-75 holds a resolution no decision row records (Node's resolve()).
    assert_eq!(app.selected_entry().unwrap().key(), "order-75:charge");
    assert_eq!(
        app.history_effect(),
        Some(Effect::LoadHistory("order-75:charge".into()))
    );
    app.update(Action::HistoryLoaded {
        subject: "order-75:charge".into(),
        result: Ok(vec![]),
    });
    let text = snap("ledger_history_other_tool_100x30", &mut app, 100, 30);
    assert!(text.contains("[other tool]"), "{text}");
    // Asked once for the same item.
    assert_eq!(app.history_effect(), None);
}

#[test]
fn filters_look_at_recipient_intent_and_meta_as_typed() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "renewal");
    let ids: Vec<i64> = app.visible_drafts().iter().map(|d| d.id).collect();
    assert_eq!(ids, vec![13], "by intent, before Enter");
    press(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "ana@");
    assert_eq!(app.visible_unknown().len(), 1, "by recipient");
    press(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "12.50");
    assert_eq!(app.visible_unknown().len(), 1, "by a meta value");
    press(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "reset by peer");
    assert_eq!(
        app.visible_unknown()[0].key(),
        "order-77:charge",
        "by error"
    );
}

#[test]
fn s_cycles_the_sort_by_age_attempts_and_recipient() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    let keys_now = |app: &App| -> Vec<String> {
        app.visible_unknown()
            .iter()
            .map(|e| e.key()[..8].to_owned())
            .collect()
    };
    assert_eq!(
        keys_now(&app),
        ["9f86d081", "order-77", "order-78", "order-79"]
    );
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('S'),
        KeyModifiers::SHIFT,
    )));
    assert_eq!(
        keys_now(&app),
        ["9f86d081", "order-78", "order-77", "order-79"]
    );
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("most attempts first"), "{text}");
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('S'),
        KeyModifiers::SHIFT,
    )));
    // Those without a recipient sort first (empty), then ana@.
    assert_eq!(keys_now(&app)[3], "9f86d081");
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('S'),
        KeyModifiers::SHIFT,
    )));
    assert_eq!(
        keys_now(&app),
        ["9f86d081", "order-77", "order-78", "order-79"]
    );
}

fn three_revisions() -> Draft {
    let mut d = base_draft(
        21,
        "letter-3",
        2 * HOUR,
        json!({"to": "gu@example.com", "intent": "letter"}),
    );
    let body = |word: &str| json!({"to": "gu@example.com", "body": format!("Dear Gu,\n\nYour balance is {word}.\nPay by Friday.\n\nRegards,\nBilling")});
    d.revision = 3;
    d.version = 3;
    d.revisions = vec![
        revision(1, 2 * HOUR, body("$10"), json!({})),
        revision(2, HOUR, body("$12"), json!({})),
        revision(3, MIN, body("$14"), json!({})),
    ];
    d
}

#[test]
fn brackets_choose_the_diff_base_and_a_body_reads_as_text_with_the_changed_word_marked() {
    let mut app = loaded_app(vec![three_revisions()], unknown(), ledger_entries());
    key(&mut app, KeyCode::Char('1'));
    let draft = app.selected_draft().unwrap().clone();
    assert_eq!(
        app.diff_base_of(&draft),
        Some(2),
        "the previous one by default"
    );
    let text = snap("draft_text_block_word_diff_100x30", &mut app, 100, 30);
    assert!(text.contains("│ Dear Gu,"), "a text block: {text}");
    assert!(!text.contains("\\n"), "no escapes: {text}");
    assert!(text.contains("+1 -1 since revision 2"), "{text}");
    key(&mut app, KeyCode::Char('['));
    assert_eq!(app.diff_base_of(&draft), Some(1));
    assert_eq!(status_text(&app), "Comparing with revision 1.");
    key(&mut app, KeyCode::Char('['));
    assert!(
        status_text(&app).contains("oldest"),
        "{}",
        status_text(&app)
    );
    key(&mut app, KeyCode::Char(']'));
    assert_eq!(app.diff_base_of(&draft), Some(2));
    key(&mut app, KeyCode::Char(']'));
    assert!(status_text(&app).contains("newest"));
    // The changed word is drawn bold and underlined; the rest of its line is not.
    let terminal = draw_with(&mut app, 100, 30, &Theme::new(false));
    let buffer = terminal.backend().buffer();
    let (x, y) = find(buffer, "$14");
    assert!(buffer[(x, y)].modifier.contains(Modifier::UNDERLINED));
    let (x, y) = find(buffer, "Your balance");
    assert!(!buffer[(x, y)].modifier.contains(Modifier::UNDERLINED));
}

/// A text block's changed line too long for the pane, followed by a field of the
/// payload: the wrapped pieces keep their `-`/`+` and the gutter (N4, K3).
fn long_line_revised() -> Draft {
    let mut d = base_draft(
        22,
        "statement-7",
        2 * HOUR,
        json!({"to": "customer@good.example", "intent": "statement"}),
    );
    let body = |month: &str| json!({"to": "customer@good.example", "body": format!("Hello,\nPlease find your statement attached for the month of {month} 2026 as agreed with you.\nRegards")});
    d.revision = 2;
    d.version = 2;
    d.revisions = vec![
        revision(1, 2 * HOUR, body("October"), json!({})),
        revision(2, MIN, body("November"), json!({})),
    ];
    d
}

#[test]
fn a_wrapped_diff_line_keeps_its_marker_and_gutter_on_every_row() {
    let mut app = loaded_app(vec![long_line_revised()], unknown(), ledger_entries());
    key(&mut app, KeyCode::Char('1'));
    for _ in 0..3 {
        key(&mut app, KeyCode::Char('J'));
    }
    let text = snap("draft_diff_wrapped_line_80x24", &mut app, 80, 24);
    let rows: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches('│'))
        .filter(|l| l.contains("2026") || l.contains("agreed") || l.contains("with you"))
        .collect();
    assert!(rows.len() >= 4, "both lines wrap: {text}");
    for row in &rows {
        assert!(
            row.starts_with("-     │ ") || row.starts_with("+     │ "),
            "every piece keeps its marker and gutter: {row:?} in {text}"
        );
    }
    assert_eq!(
        rows.iter().filter(|r| r.starts_with('-')).count(),
        rows.iter().filter(|r| r.starts_with('+')).count(),
        "{text}"
    );
}

#[test]
fn o_asks_for_the_pager_with_the_payload_or_diff_as_plain_text() {
    let mut app = loaded_app(vec![three_revisions()], unknown(), ledger_entries());
    let effects = key_effects(&mut app, 'o');
    let [Effect::Page { text, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert!(text.contains("--- revision 2"), "{text}");
    assert!(text.contains("+++ revision 3"), "{text}");
    assert!(!text.contains('\u{1b}'));
    app.update(Action::Done(Outcome::Paged(Err(
        "PAGER: no such file".into()
    ))));
    assert_eq!(
        status_text(&app),
        "Pager: PAGER: no such file. The screen is back."
    );
}

#[test]
fn the_status_fades_after_a_few_seconds_or_on_the_next_key_but_not_while_working() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('S'),
        KeyModifiers::SHIFT,
    )));
    assert!(app.status.is_some());
    app.update(Action::Tick(now() + 1000));
    assert!(app.status.is_some(), "still there after a second");
    app.update(Action::Tick(now() + STATUS_FADE_MS));
    assert!(app.status.is_none(), "gone after a few seconds");
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('S'),
        KeyModifiers::SHIFT,
    )));
    key(&mut app, KeyCode::Char('j'));
    assert!(app.status.is_none(), "the next key clears it");
    // A decision being written keeps saying so.
    key(&mut app, KeyCode::Char('f'));
    press(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('y'));
    assert!(app.working());
    app.update(Action::Tick(now() + 60_000));
    key(&mut app, KeyCode::Char('j'));
    assert!(app.working());
}

#[test]
fn the_command_line_completes_and_runs_actions_and_views_by_name() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "dec");
    press(&mut app, KeyCode::Tab);
    let Some(Overlay::Command(input)) = &app.overlay else {
        panic!("no command line")
    };
    assert_eq!(input.value(), "decisions");
    let text = snap("command_line_100x30", &mut app, 100, 30);
    assert!(text.contains(":decisions"), "{text}");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Decisions);
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "unk");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Unknown, "a unique prefix runs");
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "mark-f");
    press(&mut app, KeyCode::Enter);
    assert!(
        matches!(&app.overlay, Some(Overlay::Form(_))),
        "mark-failed opened its form"
    );
    press(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "launch");
    press(&mut app, KeyCode::Enter);
    assert!(
        status_text(&app).starts_with("No command launch;"),
        "{}",
        status_text(&app)
    );
}

#[test]
fn a_click_selects_the_row_under_it_and_the_wheel_scrolls_the_pane_under_it() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    screen(&mut app, 100, 30);
    let mouse = |kind, column, row| {
        Action::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    // The list's first row is on screen row 3 (two header rows, the border).
    app.update(mouse(MouseEventKind::Down(MouseButton::Left), 10, 5));
    assert_eq!(app.selected(View::Unknown), 2);
    app.update(mouse(MouseEventKind::ScrollDown, 70, 10));
    assert_eq!(app.selected(View::Unknown), 2, "the wheel over the details");
    assert_eq!(app.detail_scroll, 3);
    app.update(mouse(MouseEventKind::ScrollDown, 10, 10));
    assert_eq!(app.selected(View::Unknown), 3, "the wheel over the list");
    // A click below the last row selects nothing new.
    app.update(mouse(MouseEventKind::Down(MouseButton::Left), 10, 20));
    assert_eq!(app.selected(View::Unknown), 3);
}

#[test]
fn y_copies_the_one_thing_there_is_or_asks_which() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    let effects = key_effects(&mut app, 'y');
    assert_eq!(
        effects,
        vec![Effect::Copy {
            what: "key".into(),
            text: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into()
        }]
    );
    app.update(Action::Done(Outcome::Copied { what: "key".into() }));
    assert_eq!(status_text(&app), "Copied the key to the clipboard.");
    // A sent entry has a provider id too: which?
    key(&mut app, KeyCode::Char('3'));
    assert_eq!(key_effects(&mut app, 'y'), vec![]);
    snap("copy_chooser_80x24", &mut app, 80, 24);
    assert_eq!(
        key_effects(&mut app, 'p'),
        vec![Effect::Copy {
            what: "provider id".into(),
            text: "ch_3PqA9x".into()
        }]
    );
}

#[test]
fn it_opens_where_it_is_asked_or_where_the_work_is() {
    let start = |view: Option<View>, focus: Option<&str>| {
        let mut app = empty_app(None).with_start(Start {
            view,
            focus: focus.map(str::to_owned),
        });
        app.update(Action::ApprovalsLoaded(Ok(drafts())));
        app.update(Action::UnknownLoaded(Ok(unknown())));
        app
    };
    let app = start(None, Some("order-78:charge"));
    assert_eq!(app.view, View::Unknown);
    assert_eq!(app.selected_unknown().unwrap().key(), "order-78:charge");
    let app = start(None, Some("13"));
    assert_eq!(app.view, View::Approvals);
    assert_eq!(app.selected_draft().unwrap().id, 13);
    // A prefix of one unknown send's key opens on it, as `show` takes it (K6).
    let app = start(Some(View::Unknown), Some("order-78:ch"));
    assert_eq!(app.view, View::Unknown);
    assert_eq!(app.selected_unknown().unwrap().key(), "order-78:charge");
    let app = start(Some(View::Decisions), None);
    assert_eq!(app.view, View::Decisions);
    // A key that is no longer unknown is looked up in the ledger.
    let mut app = empty_app(None).with_start(Start {
        view: None,
        focus: Some("order-80:charge".into()),
    });
    app.update(Action::ApprovalsLoaded(Ok(drafts())));
    let effects = app.update(Action::UnknownLoaded(Ok(unknown())));
    assert_eq!(app.view, View::Ledger);
    assert_eq!(app.filter(View::Ledger), "order-80:charge");
    assert!(
        matches!(effects.as_slice(), [Effect::LoadLedger(q)] if q.search.as_deref() == Some("order-80:charge"))
    );
    // Nothing to review, sends to reconcile: it opens on them.
    let mut app = empty_app(None);
    app.update(Action::ApprovalsLoaded(Ok(vec![])));
    app.update(Action::UnknownLoaded(Ok(unknown())));
    assert_eq!(app.view, View::Unknown);
}

fn expired_draft() -> Draft {
    let mut d = base_draft(
        31,
        "invoice-2001",
        3 * HOUR,
        json!({"to": "ha@example.com", "intent": "invoice"}),
    );
    d.state = DraftState::Approved;
    d.approved_revision = Some(1);
    d.decided_by = Some("night-lead".into());
    d.decided_at = Some(ago(2 * HOUR));
    d.approval = Some(json!({
        "approvedBy": "night-lead",
        "approvedAt": ago(2 * HOUR),
        "expiresAt": ago(HOUR),
    }));
    d.revisions = vec![revision(
        1,
        3 * HOUR,
        json!({"to": "ha@example.com"}),
        json!({}),
    )];
    d
}

#[test]
fn an_expired_approval_reads_expired_with_who_approved_it() {
    let mut live = expired_draft();
    live.id = 32;
    live.approval = Some(json!({
        "approvedBy": "dana",
        "approvedAt": ago(MIN),
        "expiresAt": time::iso_from_millis(now() + 3 * HOUR + 12 * MIN).unwrap(),
    }));
    let mut app = loaded_app(vec![expired_draft(), live], unknown(), ledger_entries());
    let text = snap("approvals_expired_100x30", &mut app, 100, 30);
    assert!(text.contains("[expired]"), "{text}");
    assert!(
        text.contains("expired 1h ago (approved by night-lead)"),
        "{text}"
    );
    key(&mut app, KeyCode::Char('j'));
    let text = screen(&mut app, 100, 30);
    assert!(
        text.contains("approved by dana, expires in 3h 12m"),
        "{text}"
    );
    snap("approvals_expired_80x24", &mut app, 80, 24);
}

#[test]
fn in_flight_only_while_the_attempt_has_not_ended() {
    let mut ended = unknown()[3].clone().to_value();
    ended["key"] = json!("order-81:charge");
    ended["error"] = json!("Delivery is unknown: the command timed out after 1s and was killed");
    let mut entries = unknown();
    entries.push(Entry::from_value(ended).unwrap());
    let mut app = loaded_app(drafts(), entries, ledger_entries());
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('G'));
    let text = snap("unknown_ended_not_in_flight_100x30", &mut app, 100, 30);
    assert!(text.contains("ended: the command timed out"), "{text}");
    let in_flight: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[in flight?]"))
        .collect();
    assert_eq!(in_flight.len(), 1, "only order-79, still running: {text}");
    let row = text.lines().find(|l| l.contains("▶  order-81")).unwrap();
    assert!(
        !row.contains("Delivery is unknown"),
        "the list drops the prefix: {row}"
    );
}

#[test]
fn approving_a_draft_whose_facts_were_never_checked_says_so() {
    let mut d = base_draft(41, "payout-4", HOUR, json!({"to": "io@example.com"}));
    d.revisions = vec![revision(
        1,
        HOUR,
        json!({"to": "io@example.com"}),
        json!({"balance": 5}),
    )];
    let mut app = loaded_app(vec![d], unknown(), ledger_entries());
    key(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    let lines = confirm_of(&app).lines.join("\n");
    assert!(lines.contains("never checked"), "{lines}");
}

#[test]
fn badges_that_ask_for_a_second_look_are_styled_apart_from_those_that_inform() {
    let mut app = full_app();
    for theme in [Theme::new(true), Theme::new(false)] {
        let terminal = draw_with(&mut app, 100, 30, &theme);
        let buffer = terminal.backend().buffer();
        let (dx, dy) = find(buffer, "[drift]");
        let (rx, ry) = find(buffer, "[r2]");
        let (ax, ay) = find(buffer, "[!]");
        let (drift, revision, alert) = (&buffer[(dx, dy)], &buffer[(rx, ry)], &buffer[(ax, ay)]);
        assert!(drift.modifier.contains(Modifier::BOLD));
        assert!(!revision.modifier.contains(Modifier::BOLD));
        assert!(alert.modifier.contains(Modifier::REVERSED));
        if theme.colour() {
            assert_ne!(drift.fg, revision.fg);
        } else {
            assert_eq!(drift.fg, Color::Reset);
        }
    }
}

#[test]
fn help_for_the_unknown_view_at_80x24() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('?'));
    let text = snap("help_unknown_80x24", &mut app, 80, 24);
    assert!(text.contains("mark row, move down"), "{text}");
    assert!(text.contains("PgDn/C-d"), "{text}");
    assert!(text.contains("wheel"), "{text}");
}

#[test]
fn the_smallest_screen_shows_every_tab_its_count_and_where_the_list_is() {
    let mut app = full_app();
    app.update(Action::DecisionsLoaded(Ok(decisions())));
    let text = snap("approvals_64x18", &mut app, 64, 18);
    let first = text.lines().next().unwrap();
    for tab in [
        "[1 Queue (6)]",
        "2 Unknown (4)",
        "3 Ledger (1234)",
        "4 Log (4)",
    ] {
        assert!(first.contains(tab), "{tab} in {first:?}");
    }
    // The queue does not fit: its frame says where the selection is and what is below.
    assert!(text.contains("1/6 ↓"), "{text}");
    for hint in ["j/k move", "Tab view", "? help", "q quit"] {
        assert!(text.contains(hint), "{hint}: {text}");
    }
}

#[test]
fn bracket_past_the_revisions_the_queue_holds_loads_them_all() {
    // The queue holds the current and previous revisions only.
    let full = three_revisions();
    let mut partial = full.clone();
    partial.revisions.remove(0);
    let mut app = loaded_app(vec![partial.clone()], unknown(), ledger_entries());
    key(&mut app, KeyCode::Char('J'));
    key(&mut app, KeyCode::Char('J'));
    key(&mut app, KeyCode::Char('J'));
    let text = screen(&mut app, 100, 40);
    assert!(
        text.contains("(revisions 2, 3 of 3 shown; [ loads the others)"),
        "the history says what it does not show: {text}"
    );
    let effects = press(&mut app, KeyCode::Char('['));
    assert_eq!(effects, vec![Effect::LoadDraft(21)]);
    assert!(status_text(&app).contains("Loading every revision"));
    app.update(Action::DraftLoaded {
        id: 21,
        result: Ok(Box::new(full)),
    });
    let draft = app.selected_draft().unwrap().clone();
    assert_eq!(
        app.diff_base_of(&draft),
        Some(1),
        "and goes on to the older one"
    );
    // A reload of the queue keeps them while the draft is unchanged.
    app.update(Action::ApprovalsLoaded(Ok(vec![partial])));
    assert_eq!(app.selected_draft().unwrap().revisions.len(), 3);
    assert_eq!(press(&mut app, KeyCode::Char('[')), vec![]);
    assert!(
        status_text(&app).contains("oldest"),
        "{}",
        status_text(&app)
    );
}

#[test]
fn y_refuses_to_copy_what_holds_escapes_rather_than_copy_other_than_what_is_shown() {
    let mut entries = ledger_entries();
    let mut hostile = entries[0].to_value();
    hostile["providerId"] = json!("msg_\u{1b}]52;c;SGk=\u{7}\u{202e}1");
    entries[0] = Entry::from_value(hostile).unwrap();
    let mut app = loaded_app(drafts(), unknown(), entries);
    key(&mut app, KeyCode::Char('3'));
    assert_eq!(key_effects(&mut app, 'y'), vec![]);
    assert_eq!(key_effects(&mut app, 'p'), vec![], "nothing is copied");
    assert!(status_text(&app).starts_with("Not copied: the provider id holds control"));
    // The key, which is plain, still copies.
    key(&mut app, KeyCode::Char('y'));
    assert!(matches!(
        key_effects(&mut app, 'k').as_slice(),
        [Effect::Copy { .. }]
    ));
}

#[test]
fn one_reason_for_many_refusals_is_said_once() {
    let mut app = full_app();
    let full = "the disk holding /srv/billing is full; nothing was written.";
    let items = (0..20)
        .map(|i| Outcome::Refused {
            subject: format!("order-{i}:charge"),
            why: full.into(),
        })
        .chain([Outcome::Resolved {
            key: "order-99:charge".into(),
            status: Status::Sent,
        }])
        .collect();
    app.update(Action::Done(Outcome::Batch(items)));
    assert_eq!(
        status_text(&app),
        "Marked sent: 1 of 21. Refused 20: all for one reason: the disk holding /srv/billing is full; nothing was written."
    );
}

#[test]
fn at_the_top_of_the_decisions_the_newest_stays_selected_as_more_arrive() {
    let mut app = full_app();
    let mut log = decisions();
    app.update(Action::DecisionsLoaded(Ok(log.clone())));
    key(&mut app, KeyCode::Char('4'));
    log.insert(0, decision(5, 0, "eve", "resolve", "order-78:charge", None));
    app.update(Action::DecisionsLoaded(Ok(log.clone())));
    assert_eq!(app.selected_decision().unwrap().id, Some(5), "the newest");
    // Further down, the selection stays on its decision.
    key(&mut app, KeyCode::Char('j'));
    log.insert(0, decision(6, 0, "eve", "resolve", "order-79:charge", None));
    app.update(Action::DecisionsLoaded(Ok(log)));
    assert_eq!(app.selected_decision().unwrap().id, Some(4));
}

#[test]
fn approving_an_expired_draft_again_says_whose_approval_ran_out() {
    let mut app = loaded_app(vec![expired_draft()], unknown(), ledger_entries());
    key(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    let lines = confirm_of(&app).lines.join("\n");
    assert!(
        lines.contains("Its approval by night-lead expired at"),
        "{lines}"
    );
}

#[test]
fn a_key_that_is_nowhere_listed_says_the_ledger_is_searched() {
    let mut app = empty_app(None).with_start(Start {
        view: None,
        focus: Some("ffff".into()),
    });
    app.update(Action::ApprovalsLoaded(Ok(drafts())));
    app.update(Action::UnknownLoaded(Ok(unknown())));
    assert_eq!(app.view, View::Ledger);
    assert!(status_text(&app).starts_with("ffff is not in the queue or the unknown sends"));
}

/// A start searched the ledger for its text selects the send whose key it is, or the
/// one key it begins, not the first row that holds it (a key, a recipient or an error
/// may hold a digit or a word); when none is, it says the first of several is selected.
#[test]
fn a_key_searched_in_the_ledger_selects_its_own_send() {
    let searched = |focus: &str, keys: &[&str]| {
        let mut app = empty_app(None).with_start(Start {
            view: None,
            focus: Some(focus.into()),
        });
        app.update(Action::ApprovalsLoaded(Ok(drafts())));
        app.update(Action::UnknownLoaded(Ok(unknown())));
        let page = keys
            .iter()
            .map(|key| {
                Entry::from_value(json!({
                    "key": key, "status": "sent", "attempts": 1,
                    "claimedAt": ago(MIN), "updatedAt": ago(MIN), "meta": null,
                }))
                .unwrap()
            })
            .collect();
        let query = app.ledger_query();
        app.update(Action::LedgerLoaded {
            query,
            result: Ok(page),
        });
        let selected = app.selected_entry().map(|e| e.key().to_owned());
        (selected, status_text(&app))
    };
    let (selected, _) = searched("order-9", &["reorder-9-b", "order-9", "order-90"]);
    assert_eq!(selected.as_deref(), Some("order-9"));
    let (selected, _) = searched("order-8", &["reorder-8", "order-81"]);
    assert_eq!(selected.as_deref(), Some("order-81"));
    let (selected, said) = searched("charge", &["order-17:charge", "order-27:charge"]);
    assert_eq!(selected.as_deref(), Some("order-17:charge"));
    assert_eq!(
        said,
        "2 sends in the ledger hold charge, none as its key: the first is selected."
    );
}

/// A draft asked for by its id that has left the queue (dispatched) opens on its send,
/// found by its key: never on whichever key holds its digit (operator's shift, session
/// 42: `--key 7` selected another recipient's send). An id no draft has is searched for
/// as any text, once.
#[test]
fn a_draft_id_that_left_the_queue_opens_on_its_send() {
    let start = |id: &str| {
        let mut app = empty_app(None).with_start(Start {
            view: None,
            focus: Some(id.into()),
        });
        app.update(Action::ApprovalsLoaded(Ok(drafts())));
        let effects = app.update(Action::UnknownLoaded(Ok(unknown())));
        (app, effects)
    };
    let (mut app, effects) = start("7");
    assert_eq!(effects, vec![Effect::LoadDraft(7)]);
    let mut gone = base_draft(7, "order-78:charge", HOUR, json!({"to": "ned@example.com"}));
    gone.state = DraftState::Dispatched;
    app.update(Action::DraftLoaded {
        id: 7,
        result: Ok(Box::new(gone)),
    });
    assert_eq!(app.view, View::Unknown);
    assert_eq!(app.selected_unknown().unwrap().key(), "order-78:charge");
    assert!(
        status_text(&app).starts_with("Draft 7 is dispatched and has left the queue"),
        "{}",
        status_text(&app)
    );
    // Only an id as the queue writes it is a draft's (hostile round, session 42:
    // AH3, `007` was taken for draft 7).
    for text in ["007", "+7", "-1"] {
        let (app, effects) = start(text);
        assert_eq!(app.view, View::Ledger, "{text}");
        assert!(
            matches!(effects.as_slice(), [Effect::LoadLedger(q)] if q.search.as_deref() == Some(text)),
            "{text}: {effects:?}"
        );
    }
    let (mut app, _) = start("70");
    let effects = app.update(Action::DraftLoaded {
        id: 70,
        result: Err("there is no draft 70".into()),
    });
    assert_eq!(app.view, View::Ledger);
    assert!(
        matches!(effects.as_slice(), [Effect::LoadLedger(q)] if q.search.as_deref() == Some("70"))
    );
}

/// A bulk form's title says how many marked rows it leaves, and the form is drawn wide
/// enough to show all of it where the screen allows.
#[test]
fn a_bulk_form_shows_its_whole_title() {
    let mut app = full_app();
    key(&mut app, KeyCode::Char('2'));
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('a'),
        KeyModifiers::CONTROL,
    )));
    let first = app.visible_unknown()[0].key().to_owned();
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, &first);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_unknown().len(), 1, "the filter shows one send");
    key(&mut app, KeyCode::Char('f'));
    let hidden = app.state(View::Unknown).marked.len().saturating_sub(1);
    assert!(hidden > 0);
    let title = format!(
        "Settle 1 marked sends as failed ({hidden} marked but hidden by the filter are left)"
    );
    let text = screen(&mut app, 130, 30);
    assert!(text.contains(&title), "{text}");
}

/// A pending row whose claim time cannot be read is drawn as a claim time in doubt,
/// not as a send in flight, and its detail says why its age says nothing.
#[test]
fn an_unreadable_claim_time_is_drawn_as_in_doubt_not_in_flight() {
    let bad = Entry::from_value(json!({
        "key": "zz-bad", "status": "pending", "attempts": 1,
        "claimedAt": "bad", "updatedAt": "bad", "meta": {"to": "vip@bank.example"},
    }))
    .unwrap();
    let mut app = loaded_app(drafts(), vec![bad], ledger_entries());
    key(&mut app, KeyCode::Char('2'));
    let text = screen(&mut app, 130, 30);
    assert!(text.contains("[claim time?]"), "{text}");
    assert!(!text.contains("[in flight?]"), "{text}");
    assert!(text.contains("Its claim time cannot be read"), "{text}");
}

/// A call recorded unknown whose proxy still listens for its answer says it is
/// recorded unknown and may still be made, not that its attempt has not ended beside a
/// history line saying it ended (hostile round, session 42: AH9).
#[test]
fn a_call_a_proxy_listens_for_is_said_to_be_unknown_and_maybe_made() {
    let mut app = full_app();
    let mut listened = Entry::from_value(json!({
        "key": "listened-1",
        "status": "pending",
        "attempts": 1,
        "claimedAt": ago(2 * MIN),
        "updatedAt": ago(MIN),
        "error": "Delivery is unknown: past the proxy's limit",
        "uncertain": true,
        "meta": {"to": "ivy@example.com", "intent": "wire"},
    }))
    .unwrap();
    let until = time::parse_date(&ago(MIN)).unwrap() + 3_600_000;
    send_once::ledger::claimer::listening_record(
        &mut listened,
        time::iso_from_millis(until).unwrap(),
    );
    app.update(Action::UnknownLoaded(Ok(vec![listened])));
    key(&mut app, KeyCode::Char('2'));
    let text = screen(&mut app, 160, 40);
    assert!(
        text.contains("It is recorded unknown, but it may still be made"),
        "{text}"
    );
    assert!(!text.contains("has not ended"), "{text}");
}

/// A recipient of wide characters (CJK, emoji) is cut to its column by the columns it
/// takes, with a `…`, and the row's age and attempt stay in view (shift round, session
/// 40: AD13, AD16).
#[test]
fn a_wide_recipient_is_cut_to_its_column_and_the_row_keeps_its_columns() {
    let mut app = full_app();
    let wide = Entry::from_value(json!({
        "key": "wide-1",
        "status": "pending",
        "attempts": 1,
        "claimedAt": ago(2 * HOUR),
        "updatedAt": ago(2 * HOUR),
        "error": "Delivery is unknown: timed out",
        "uncertain": true,
        "meta": {"to": "陈伟陈伟陈伟陈伟陈伟陈伟陈伟陈伟陈伟陈伟@例子.中国", "intent": "发票提醒🧾🧾🧾"},
    }))
    .unwrap();
    app.update(Action::UnknownLoaded(Ok(vec![wide])));
    key(&mut app, KeyCode::Char('2'));
    let text = screen(&mut app, 80, 24);
    let row = text
        .lines()
        .find(|line| line.contains('陈'))
        .unwrap_or_else(|| panic!("no row: {text}"));
    assert!(row.contains('…'), "{row}");
    assert!(
        row.contains("2h #1"),
        "the age and attempt stay in view: {row}"
    );
}
