//! The Decisions view says whether the decision log's hash chain holds: verified with
//! its length and head, or broken at the first decision that does not match (at the
//! foot of the list, and the whole reason atop the detail). The chain is checked after
//! every load of the log, over the whole log.

use crate::harness::clock::now;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use send_once::ledger::chain;
use send_once::ledger::{Decision, DecisionOutcome, time};
use send_once::ui::action::{Action, Effect};
use send_once::ui::app::{App, CHAIN_RECHECK_MS, Options};
use send_once::ui::keymap::View;
use send_once::ui::theme::Theme;
use send_once::ui::view;
use serde_json::json;

fn app() -> App {
    let mut app = App::new(Options {
        ledger_label: "/srv/billing/ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 300_000,
        no_queue: Some("no queue".into()),
        now: now(),
    });
    app.update(Action::UnknownLoaded(Ok(Vec::new())));
    app
}

/// Three resolutions, chained as a store chains them, oldest first.
fn log() -> Vec<Decision> {
    let mut log: Vec<Decision> = Vec::new();
    for i in 1..=3 {
        let decision = Decision {
            id: None,
            at: time::iso_from_millis(now() - (4 - i) * 600_000).unwrap(),
            by: Some("dana".into()),
            action: "resolve".into(),
            subject: format!("order-{i}:charge").into(),
            note: Some(format!("checked {i}")),
            outcome: DecisionOutcome::Changed,
            detail: json!({"from": "pending", "status": "failed"}),
            link: None,
        };
        let head = chain::Head::of(&log);
        log.extend(chain::to_append(&head, &decision, &[i]));
    }
    log
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| view::draw(f, app, &Theme::new(false)))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The page the view shows: the newest first.
fn load(app: &mut App, log: &[Decision]) -> Vec<Effect> {
    app.update(Action::DecisionsLoaded(Ok(log
        .iter()
        .rev()
        .cloned()
        .collect())))
}

/// The page the view shows and what verifying the whole log found.
fn show(app: &mut App, log: &[Decision]) {
    let effects = load(app, log);
    assert!(
        effects.contains(&Effect::CheckChain),
        "a load of the log asks for its chain: {effects:?}"
    );
    app.update(Action::ChainChecked(Ok(chain::verify(log))));
}

#[test]
fn the_decisions_view_says_the_chain_is_verified_with_its_head() {
    let mut app = app();
    app.update(Action::Key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Char('4'),
    )));
    assert_eq!(app.view, View::Decisions);
    let log = log();
    let effects = load(&mut app, &log);
    assert!(effects.contains(&Effect::CheckChain), "{effects:?}");
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("chain: checking…"), "{text}");
    app.update(Action::ChainChecked(Ok(chain::verify(&log))));
    let text = screen(&mut app, 100, 30);
    let head = &log[2].hash().unwrap()[..8];
    assert!(
        text.contains(&format!("chain verified · 3 decisions · head {head}")),
        "{text}"
    );
    insta::assert_snapshot!("decisions_chain_verified_100x30", text);

    // The same log loaded again soon after (a send elsewhere changed the ledger) is not
    // hashed again at once: the check is owed, and made once the interval has passed.
    let effects = load(&mut app, &log);
    assert!(!effects.contains(&Effect::CheckChain), "{effects:?}");
    let soon = app.update(Action::Tick(now() + CHAIN_RECHECK_MS - 1));
    assert!(!soon.contains(&Effect::CheckChain), "{soon:?}");
    let due = app.update(Action::Tick(now() + CHAIN_RECHECK_MS));
    assert!(due.contains(&Effect::CheckChain), "{due:?}");
    let after = app.update(Action::Tick(now() + 3 * CHAIN_RECHECK_MS));
    assert!(
        !after.contains(&Effect::CheckChain),
        "nothing owed: {after:?}"
    );

    // A new decision at the head is checked at once.
    let mut longer = log.clone();
    let next = Decision {
        id: None,
        link: None,
        note: Some("checked 4".into()),
        ..log[2].clone()
    };
    let head = chain::Head::of(&longer);
    longer.extend(chain::to_append(&head, &next, &[4]));
    let effects = load(&mut app, &longer);
    assert!(effects.contains(&Effect::CheckChain), "{effects:?}");
}

#[test]
fn the_decisions_view_says_where_the_chain_is_broken() {
    let mut app = app();
    app.update(Action::Key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Char('4'),
    )));
    let mut log = log();
    log[1].note = Some("seen in the provider log \u{1b}[2J".into());
    show(&mut app, &log);
    let text = screen(&mut app, 100, 30);
    assert!(
        text.contains("chain BROKEN at decision 2: its content no longer matches its hash"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
    insta::assert_snapshot!("decisions_chain_broken_100x30", text);
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("chain BROKEN at decision 2"), "{text}");
    insta::assert_snapshot!("decisions_chain_broken_80x24", text);

    // A log that cannot be read for the check says so, not "verified".
    app.update(Action::ChainChecked(Err("the disk went away".into())));
    let text = screen(&mut app, 100, 30);
    assert!(
        text.contains("chain not checked: the disk went away"),
        "{text}"
    );
}
