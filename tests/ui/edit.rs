//! `e` in the TUI's state machine, without a terminal: what the editor is given, what
//! its text becomes, and that text which could not be saved is never dropped. The
//! editor and the queue themselves are driven end to end in tests/tui/edit/.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use send_once::ledger::time;
use send_once::review::Revision;
use send_once::ui::action::{Action, Effect, Gone, Outcome};
use send_once::ui::app::{App, Options};

use crate::harness;
use crate::harness::clock::NOW;
use harness::queued_draft;

/// The app as dana, with one queued draft (id 7, revision 2, version 3) loaded.
fn app() -> App {
    let now = time::parse_date(NOW).unwrap();
    let mut app = App::new(Options {
        ledger_label: "L.db".into(),
        by: "dana".into(),
        older_than_ms: 300_000,
        no_queue: None,
        now,
    });
    let mut draft = queued_draft(7, "k-7", NOW.into());
    draft.revision = 2;
    draft.version = 3;
    draft.submitted_by = Some("agent".into());
    draft.revisions = vec![Revision {
        revision: 2,
        payload: r#"{"to":"ana@example.com","body":"Hi"}"#.into(),
        payload_hash: "h2".into(),
        facts: Default::default(),
        submitted_at: NOW.into(),
        submitted_by: Some("agent".into()),
    }];
    app.update(Action::ApprovalsLoaded(Ok(vec![draft])));
    app.update(Action::UnknownLoaded(Ok(Vec::new())));
    app
}

fn press(app: &mut App, c: char) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn e_opens_the_payload_as_shown_and_its_save_is_judged_on_the_draft_as_shown() {
    let mut app = app();
    let effects = press(&mut app, 'e');
    assert_eq!(
        effects,
        vec![Effect::Edit {
            id: 7,
            revision: 2,
            version: 3,
            text: "{\n  \"body\": \"Hi\",\n  \"to\": \"ana@example.com\"\n}\n".into(),
        }]
    );
    let effects = app.update(Action::EditorClosed {
        id: 7,
        revision: 2,
        version: 3,
        result: Ok(b"{\"body\":\"Hello\"}".to_vec()),
    });
    assert_eq!(
        effects,
        vec![Effect::SaveEdit {
            id: 7,
            key: "k-7".into(),
            revision: 2,
            version: 3,
            payload: "{\"body\":\"Hello\"}".into(),
            by: "dana".into(),
        }]
    );
}

/// Refused as not JSON: the text comes back, and the next `e` opens it, judged
/// against the version the edit began from (not whatever the draft is at by then).
#[test]
fn an_edit_refused_as_not_json_is_opened_again_against_the_version_it_began_from() {
    let mut app = app();
    app.update(Action::Done(Outcome::EditNotSaved {
        id: 7,
        key: "k-7".into(),
        revision: 2,
        version: 3,
        why: "the payload is not JSON: line 1, column 9: unexpected end of input".into(),
        kept: Some("{\"body\":".into()),
    }));
    assert_eq!(
        status(&app),
        "Not saved: the payload is not JSON: line 1, column 9: unexpected end of input. e opens your edit again. E starts from the draft instead."
    );
    let effects = press(&mut app, 'e');
    assert_eq!(
        effects,
        vec![Effect::Edit {
            id: 7,
            revision: 2,
            version: 3,
            text: "{\"body\":".into(),
        }]
    );
    // Saved at last: the kept text is dropped, and the next `e` starts afresh.
    app.update(Action::Done(Outcome::Edited {
        id: 7,
        revision: 3,
        by: "dana".into(),
        was_approved: false,
        voided: Vec::new(),
    }));
    assert_eq!(
        status(&app),
        "Draft 7 edited; revision 3 by dana: needs approval."
    );
    assert!(app.kept_edits.is_empty());
    assert_eq!(
        app.diff_base,
        Some(2),
        "the diff is against the revision replaced"
    );
}

/// The ledger went away while the editor was open: nothing is sent to it, and the
/// text is kept for `e`; an editor that failed keeps what was kept before.
#[test]
fn text_the_ledger_cannot_take_now_is_kept_and_an_editor_that_failed_drops_nothing() {
    let mut app = app();
    app.update(Action::LedgerGone(Gone::Deleted));
    let effects = app.update(Action::EditorClosed {
        id: 7,
        revision: 2,
        version: 3,
        result: Ok(b"{\"body\":\"Hello\"}".to_vec()),
    });
    assert_eq!(effects, Vec::<Effect>::new());
    assert!(
        status(&app).contains("e opens it again"),
        "{}",
        status(&app)
    );
    assert_eq!(app.kept_edits[&7].text, "{\"body\":\"Hello\"}");

    app.update(Action::LedgerBack { reopened: false });
    let effects = app.update(Action::EditorClosed {
        id: 7,
        revision: 2,
        version: 3,
        result: Err("the editor `vi` ended with exit status: 1".into()),
    });
    assert_eq!(effects, Vec::<Effect>::new());
    assert_eq!(
        status(&app),
        "Editor: the editor `vi` ended with exit status: 1. Nothing was changed. Your earlier edit is still kept: e opens it again."
    );
    assert_eq!(app.kept_edits[&7].text, "{\"body\":\"Hello\"}");

    // Not UTF-8: refused before the queue is asked, and kept.
    let effects = app.update(Action::EditorClosed {
        id: 7,
        revision: 2,
        version: 3,
        result: Ok(vec![b'{', 0xff, b'}']),
    });
    assert_eq!(effects, Vec::<Effect>::new());
    assert!(status(&app).contains("not UTF-8 text (invalid byte at offset 1)"));
}

/// A refusal that names the file the edit is kept in stays until the next message:
/// it must not fade before it is read.
#[test]
fn the_file_an_edit_is_kept_in_stays_on_the_status_line() {
    let mut app = app();
    app.update(Action::Done(Outcome::EditNotSaved {
        id: 7,
        key: "k-7".into(),
        revision: 2,
        version: 3,
        why: "draft 7 changed while you were editing it (revision 3 was added by agent at T), so the edit was not saved: look at the draft again; your edit is kept in /tmp/x.json".into(),
        kept: None,
    }));
    let later = time::parse_date(NOW).unwrap() + 3_600_000;
    app.update(Action::Tick(later));
    assert!(
        status(&app).ends_with("your edit is kept in /tmp/x.json."),
        "{}",
        status(&app)
    );
    assert!(
        app.kept_edits.is_empty(),
        "it is in the file, not kept here"
    );
}

/// A kept edit opens again only on the draft it was made for: not on another draft
/// that has the same id in a file opened at the path since (another ledger's draft 7,
/// another recipient), and not once another file is opened at all (the edit is in a
/// file of its own by then, named when it was refused).
#[test]
fn a_kept_edit_never_opens_for_another_draft_with_the_same_id() {
    let kept = || Outcome::EditNotSaved {
        id: 7,
        key: "k-7".into(),
        revision: 2,
        version: 3,
        why: "the payload is not JSON: line 1, column 9: unexpected end of input".into(),
        kept: Some("{\"body\":\"Pay 100\"".into()),
    };
    let opened_text = |effects: Vec<Effect>| match effects.as_slice() {
        [Effect::Edit { text, .. }] => text.clone(),
        other => panic!("e did not open the editor: {other:?}"),
    };

    // Another draft 7 in the list (another key): e opens its own payload.
    let mut ui = app();
    ui.update(Action::Done(kept()));
    let mut other = queued_draft(7, "k-other", NOW.into());
    other.revisions = vec![Revision {
        revision: 1,
        payload: r#"{"to":"mallory@example.com","body":"Wire 9999"}"#.into(),
        payload_hash: "h9".into(),
        facts: Default::default(),
        submitted_at: NOW.into(),
        submitted_by: Some("agent".into()),
    }];
    ui.update(Action::ApprovalsLoaded(Ok(vec![other.clone()])));
    let text = opened_text(press(&mut ui, 'e'));
    assert!(text.contains("Wire 9999"), "{text}");
    assert!(!text.contains("Pay 100"), "{text}");

    // The same draft, but another file opened at the path: the kept edit is let go.
    let mut ui = app();
    ui.update(Action::Done(kept()));
    assert!(opened_text(press(&mut ui, 'e')).contains("Pay 100"));
    ui.update(Action::Done(kept()));
    ui.update(Action::LedgerBack { reopened: true });
    assert!(ui.kept_edits.is_empty());
}
