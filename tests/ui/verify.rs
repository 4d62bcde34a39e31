//! `v` in the Unknown view without a terminal: which verify command each channel gets
//! (`--verify`, the config file's `[verify]` table), the one effect at a time it asks
//! for, what the answer changes (and never writes), the settle forms it prefills, and
//! what is drawn of it (snapshots, with hostile evidence shown escaped).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::harness::clock::{MIN, ago, now};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use send_once::config::{VerifyCommand, VerifySetup};
use send_once::ledger::{Entry, Seen, Status};
use send_once::provider::{CheckAnswer, Limit};
use send_once::ui::action::{Action, Effect};
use send_once::ui::app::{App, FormKind, Options, Overlay, RowMark};
use send_once::ui::keymap::{self, View};
use send_once::ui::theme::Theme;
use send_once::ui::view;
use serde_json::{Map, Value, json};

fn unknown(key: &str, channel: Option<&str>, to: &str, attempts: u64) -> Entry {
    let mut meta = json!({"to": to, "intent": "renewal"});
    if let Some(channel) = channel {
        meta["channel"] = json!(channel);
    }
    Entry::from_value(json!({
        "key": key,
        "status": "pending",
        "attempts": attempts,
        "claimedAt": ago(40 * MIN),
        "updatedAt": ago(39 * MIN),
        "error": "send-once: outcome unknown: timed out after 30s",
        "uncertain": true,
        "meta": meta,
    }))
    .unwrap()
}

fn entries() -> Vec<Entry> {
    vec![
        unknown("k-ann", Some("email"), "ann@example.com", 1),
        unknown("k-bob", Some("sms"), "+15550100", 1),
        unknown("k-cat", Some("fax"), "cat@example.com", 2),
    ]
}

fn limit() -> Limit {
    Limit::new(Duration::from_secs(30))
}

fn command(text: &str, from: &str) -> VerifyCommand {
    VerifyCommand {
        text: text.to_owned(),
        argv: shell_split(text),
        from: from.to_owned(),
    }
}

fn shell_split(text: &str) -> Vec<String> {
    send_once::provider::split_command("test", text).unwrap()
}

/// A table as the config file would give it: email and sms, no default.
fn table() -> VerifySetup {
    let mut setup = VerifySetup::none(limit());
    setup.by_channel = BTreeMap::from([
        (
            "email".to_owned(),
            command("gmail-verify --account ops", "config.toml verify.email"),
        ),
        (
            "sms".to_owned(),
            command("twilio-verify", "config.toml verify.sms"),
        ),
    ]);
    setup.config_path = Some("/home/dana/.config/send-once/config.toml".into());
    setup
}

fn app(setup: VerifySetup) -> App {
    let mut app = App::new(Options {
        ledger_label: "ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5 * MIN,
        no_queue: Some("no queue in these tests".into()),
        now: now(),
    })
    .with_verify(setup);
    assert_eq!(app.update(Action::UnknownLoaded(Ok(entries()))), vec![]);
    assert_eq!(app.view, View::Unknown, "opens where the work is");
    app
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn ch(app: &mut App, c: char) -> Vec<Effect> {
    press(app, KeyCode::Char(c))
}

fn status(app: &App) -> (String, bool) {
    let s = app.status.as_ref().expect("a status line");
    (s.text.clone(), s.ok)
}

fn listed(app: &App, key: &str) -> Entry {
    app.unknown
        .ready()
        .unwrap()
        .iter()
        .find(|e| e.key() == key)
        .unwrap()
        .clone()
}

fn verify_effect(app: &App, key: &str, argv: &str) -> Effect {
    Effect::Verify {
        key: key.to_owned(),
        entry: Box::new(listed(app, key)),
        argv: shell_split(argv),
        timeout: limit(),
        by: "dana".to_owned(),
        command: argv.to_owned(),
    }
}

fn happened(id: &str) -> CheckAnswer {
    CheckAnswer::Happened {
        provider_id: Some(id.to_owned()),
        id_problem: None,
        evidence: json!({"id": id, "threadId": "t-9"})
            .as_object()
            .unwrap()
            .clone(),
    }
}

fn answer(app: &mut App, key: &str, answer: CheckAnswer) -> Vec<Effect> {
    let seen = Seen::entry(&listed(app, key));
    app.update(Action::Verified {
        key: key.to_owned(),
        seen,
        answer,
    })
}

fn form(app: &App) -> &send_once::ui::app::Form {
    match &app.overlay {
        Some(Overlay::Form(form)) => form,
        other => panic!("no form open: {other:?}"),
    }
}

fn values(app: &App) -> Vec<(&'static str, String)> {
    form(app)
        .fields
        .iter()
        .map(|f| (f.label, f.input.value().to_owned()))
        .collect()
}

// ---------------------------------------------------------------------------------
// Asking

#[test]
fn v_asks_the_verify_command_of_the_selected_rows_channel_and_writes_nothing() {
    let mut app = app(table());
    let effects = ch(&mut app, 'v');
    assert_eq!(
        effects,
        vec![verify_effect(&app, "k-ann", "gmail-verify --account ops")]
    );
    assert_eq!(app.verify_mark("k-ann"), Some(RowMark::Running));
    let (text, ok) = status(&app);
    assert!(ok, "{text}");
    assert!(
        text.contains("Verifying ann@example.com · renewal with config.toml verify.email"),
        "{text}"
    );
    // The sms row gets its own command.
    ch(&mut app, 'j');
    assert_eq!(
        ch(&mut app, 'v'),
        vec![],
        "one at a time: the second waits its turn"
    );
    assert_eq!(app.verify_mark("k-bob"), Some(RowMark::Queued));
    let next = answer(&mut app, "k-ann", CheckAnswer::NotThere);
    assert_eq!(next, vec![verify_effect(&app, "k-bob", "twilio-verify")]);
    assert_eq!(app.verify_mark("k-ann"), Some(RowMark::NotThere));
    assert_eq!(app.verify_mark("k-bob"), Some(RowMark::Running));
    // An answer is not a decision: nothing reloads, nothing resolves.
    assert!(!next.iter().any(|e| matches!(e, Effect::Resolve { .. })));
}

#[test]
fn a_channel_without_a_command_says_so_and_how_to_configure_it() {
    let mut app = app(table());
    ch(&mut app, 'G');
    assert_eq!(app.selected_unknown().unwrap().key(), "k-cat");
    assert_eq!(ch(&mut app, 'v'), vec![]);
    let (text, ok) = status(&app);
    assert!(!ok);
    assert_eq!(
        text,
        "No verify command for channel \"fax\": start with send-once tui --verify CMD, or add fax = \"CMD\" under [verify] in /home/dana/.config/send-once/config.toml."
    );
    assert_eq!(app.verify_mark("k-cat"), None);

    // A default line covers the channels not listed; --verify covers every channel.
    let mut with_default = table();
    with_default.by_channel.insert(
        "default".into(),
        command("generic-verify", "config.toml verify.default"),
    );
    let mut app = self::app(with_default);
    ch(&mut app, 'G');
    assert_eq!(
        ch(&mut app, 'v'),
        vec![verify_effect(&app, "k-cat", "generic-verify")]
    );

    let mut every = table();
    every.every = Some(command("my-verify --all", "--verify"));
    let mut app = self::app(every);
    assert_eq!(
        ch(&mut app, 'v'),
        vec![verify_effect(&app, "k-ann", "my-verify --all")],
        "--verify overrides the table"
    );
}

#[test]
fn with_no_command_at_all_v_says_how_to_give_one() {
    let mut app = app(VerifySetup::none(limit()));
    assert_eq!(ch(&mut app, 'v'), vec![]);
    let (text, ok) = status(&app);
    assert!(!ok);
    assert!(
        text.starts_with("No verify command for channel \"email\": start with send-once tui --verify CMD, or add email = \"CMD\" under [verify] in the config file"),
        "{text}"
    );
}

#[test]
fn marked_rows_are_asked_one_at_a_time_in_order_and_those_without_a_command_are_named() {
    let mut app = app(table());
    // Mark all three (the fax one has no command).
    ch(&mut app, ' ');
    ch(&mut app, ' ');
    ch(&mut app, ' ');
    assert_eq!(app.state(View::Unknown).marked.len(), 3);
    let effects = ch(&mut app, 'v');
    assert_eq!(
        effects,
        vec![verify_effect(&app, "k-ann", "gmail-verify --account ops")]
    );
    let (text, ok) = status(&app);
    assert!(!ok, "a row was left out: {text}");
    assert!(text.contains("1 more waiting their turn"), "{text}");
    assert!(text.contains("channel \"fax\""), "{text}");
    assert_eq!(app.verify_mark("k-bob"), Some(RowMark::Queued));
    assert_eq!(app.verify_mark("k-cat"), None);

    let next = answer(&mut app, "k-ann", happened("msg-1"));
    assert_eq!(next, vec![verify_effect(&app, "k-bob", "twilio-verify")]);
    let (text, _) = status(&app);
    assert!(text.contains("it happened, provider id msg-1"), "{text}");
    assert!(text.contains("(1 still to verify.)"), "{text}");
    let last = answer(
        &mut app,
        "k-bob",
        CheckAnswer::inconclusive("the verify command timed out after 30s"),
    );
    assert_eq!(last, vec![], "the queue is empty");
    assert_eq!(app.verifying.running, None);
    let (text, ok) = status(&app);
    assert!(!ok);
    assert!(
        text.contains("inconclusive: the verify command timed out after 30s"),
        "{text}"
    );
    // Both answers are remembered by key.
    assert_eq!(app.verify_mark("k-ann"), Some(RowMark::Happened));
    assert_eq!(app.verify_mark("k-bob"), Some(RowMark::Inconclusive));
}

#[test]
fn a_settled_or_retried_entry_drops_its_answer_and_a_late_answer_is_not_kept() {
    let mut app = app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    // A reload with the same entries keeps the answer.
    app.update(Action::UnknownLoaded(Ok(entries())));
    assert_eq!(app.verify_mark("k-ann"), Some(RowMark::Happened));
    // Another attempt of the same key is another send: the answer was not about it.
    let mut changed = entries();
    changed[0] = unknown("k-ann", Some("email"), "ann@example.com", 2);
    app.update(Action::UnknownLoaded(Ok(changed)));
    assert_eq!(app.verify_mark("k-ann"), None);

    // An answer that comes after the entry changed is said but not kept.
    ch(&mut app, 'j');
    ch(&mut app, 'v');
    let before = Seen::entry(&listed(&app, "k-bob"));
    let mut retried = entries();
    retried[1] = unknown("k-bob", Some("sms"), "+15550100", 5);
    app.update(Action::UnknownLoaded(Ok(retried)));
    app.update(Action::Verified {
        key: "k-bob".into(),
        seen: before,
        answer: happened("SM1"),
    });
    assert_eq!(app.verify_mark("k-bob"), None);
    let (text, ok) = status(&app);
    assert!(!ok);
    // The provider has it and someone changed it: if to failed, it goes again. The
    // warning stays until the next message (finding H1).
    assert!(
        text.contains("changed or settled by someone while it was asked")
            && text.contains("the next run sends it again")
            && text.contains(" k-bob sent --expect failed --provider-id SM1"),
        "{text}"
    );
    app.update(Action::Tick(now() + 60_000));
    assert_eq!(status(&app).0, text, "the warning faded");
}

/// Finding H1: verify found it, then it left the list, settled by someone else: said,
/// and kept on the screen. Settled here, through the form, it is not a warning.
#[test]
fn a_found_send_settled_by_someone_else_is_said_until_the_next_message() {
    let mut app = self::app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    let without_ann: Vec<Entry> = entries()
        .into_iter()
        .filter(|e| e.key() != "k-ann")
        .collect();
    app.update(Action::UnknownLoaded(Ok(without_ann.clone())));
    let (text, ok) = status(&app);
    assert!(!ok);
    assert!(
        text.contains("left the Unknown view, settled by someone"),
        "{text}"
    );
    assert!(text.contains("the next run sends it again"), "{text}");
    // The fix, to paste: the Ledger view shows the entry and does not settle it (K2).
    assert!(
        text.contains("send-once resolve")
            && text.contains(" k-ann sent --expect failed --provider-id msg-1"),
        "{text}"
    );
    assert!(!text.contains("view (4)"), "{text}");

    // Settled here: the answer is forgotten with the settlement, and the reload that
    // follows says nothing of it.
    let mut here = self::app(table());
    ch(&mut here, 'v');
    answer(&mut here, "k-ann", happened("msg-1"));
    here.update(Action::Done(send_once::ui::action::Outcome::Resolved {
        key: "k-ann".into(),
        status: send_once::ledger::Status::Sent,
    }));
    here.update(Action::UnknownLoaded(Ok(without_ann)));
    let (text, _) = status(&here);
    assert!(!text.contains("settled by someone"), "{text}");
}

// ---------------------------------------------------------------------------------
// Settling from an answer

#[test]
fn after_happened_enter_opens_the_sent_form_prefilled_and_confirming_resolves_what_was_verified() {
    let mut app = app(table());
    ch(&mut app, 'v');
    let seen = Seen::entry(&listed(&app, "k-ann"));
    answer(&mut app, "k-ann", happened("msg-1"));
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let note = "verify (gmail-verify --account ops) at 2026-09-27T12:00:00.000Z: it happened; evidence {\"id\":\"msg-1\",\"threadId\":\"t-9\"}";
    assert_eq!(
        values(&app),
        vec![
            ("Note", note.to_owned()),
            ("Name", "dana".to_owned()),
            ("Provider id", "msg-1".to_owned()),
        ]
    );
    assert!(matches!(
        &form(&app).kind,
        FormKind::MarkSent { key, seen: s, .. } if key == "k-ann" && *s == seen
    ));
    // The person can edit the note; the form still needs Enter, then a confirmation.
    press(&mut app, KeyCode::End);
    for c in " (checked)".chars() {
        assert_eq!(ch(&mut app, c), vec![]);
    }
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![],
        "the form only opens a confirmation"
    );
    let effects = press(&mut app, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::Resolve {
            key: "k-ann".into(),
            status: Status::Sent,
            by: "dana".into(),
            note: Some(format!("{note} (checked)")),
            provider_id: Some("msg-1".into()),
            seen,
            even_if_running: false,
            even_if_found: false,
        }]
    );
}

#[test]
fn with_rows_marked_enter_still_settles_only_the_row_verify_answered_about() {
    let mut app = app(table());
    ch(&mut app, ' ');
    ch(&mut app, ' ');
    ch(&mut app, 'g');
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    press(&mut app, KeyCode::Enter);
    assert!(
        matches!(&form(&app).kind, FormKind::MarkSent { key, .. } if key == "k-ann"),
        "{:?}",
        form(&app).kind
    );
    assert_eq!(values(&app)[2], ("Provider id", "msg-1".to_owned()));
}

#[test]
fn s_on_a_happened_row_opens_the_same_prefilled_form() {
    let mut app = app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    ch(&mut app, 's');
    assert_eq!(values(&app)[2], ("Provider id", "msg-1".to_owned()));
    assert!(values(&app)[0].1.contains("it happened"));
}

#[test]
fn after_not_there_nothing_is_prefilled_as_failed_until_f_is_pressed() {
    let mut app = app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", CheckAnswer::NotThere);
    // Enter opens nothing: "not there" alone is no reason to call it failed.
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert!(app.overlay.is_none());
    let (text, _) = status(&app);
    assert!(text.contains("does not make it failed"), "{text}");
    // s opens the sent form as it always does, with nothing from verify in it.
    ch(&mut app, 's');
    assert_eq!(
        values(&app),
        vec![
            ("Note", String::new()),
            ("Name", "dana".into()),
            ("Provider id", String::new())
        ]
    );
    press(&mut app, KeyCode::Esc);
    // f opens the failed form, its note saying what verify said; still to confirm.
    ch(&mut app, 'f');
    assert_eq!(
        values(&app),
        vec![
            (
                "Note",
                "verify (gmail-verify --account ops) at 2026-09-27T12:00:00.000Z said not there: the provider has no record of it".to_owned()
            ),
            ("Name", "dana".into()),
        ]
    );
    assert!(matches!(form(&app).kind, FormKind::MarkFailed { .. }));
}

#[test]
fn enter_without_an_answer_or_on_an_inconclusive_one_opens_nothing() {
    let mut app = app(table());
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert!(app.overlay.is_none());
    assert!(status(&app).0.starts_with("Not verified yet: v asks"));
    ch(&mut app, 'v');
    answer(
        &mut app,
        "k-ann",
        CheckAnswer::inconclusive("the verify command exited 7"),
    );
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    assert!(app.overlay.is_none());
    assert!(status(&app).0.contains("the verify command exited 7"));
}

#[test]
fn hostile_evidence_is_escaped_in_the_note_the_detail_and_the_status() {
    let mut app = app(table());
    ch(&mut app, 'v');
    let evidence = json!({
        "id": "msg-\u{202e}gpj.exe",
        "subject": "paid \u{1b}]0;owned\u{7}\u{1b}[2J \u{200b}ok",
    });
    let id_problem = send_once::provider::provider_id_in(evidence.as_object().unwrap())
        .expect_err("a bidi id is no id");
    answer(
        &mut app,
        "k-ann",
        CheckAnswer::Happened {
            provider_id: None,
            id_problem: Some(id_problem),
            evidence: evidence.as_object().unwrap().clone(),
        },
    );
    let suspicious = |text: &str| text.chars().any(send_once::text::is_suspicious);
    let (text, _) = status(&app);
    assert!(!suspicious(&text), "{text:?}");
    for (line, _) in app.verify_detail("k-ann") {
        assert!(!suspicious(&line), "{line:?}");
    }
    press(&mut app, KeyCode::Enter);
    let note = values(&app)[0].1.clone();
    assert!(
        !suspicious(&note),
        "the note written to the ledger: {note:?}"
    );
    assert!(note.contains(r"msg-\u202egpj.exe"), "{note}");
    assert!(
        note.contains(r"\u001b]0;owned\u0007\u001b[2J \u200bok"),
        "{note}"
    );
    assert_eq!(
        values(&app)[2],
        ("Provider id", String::new()),
        "no id taken"
    );
    // And the screen holds none of it raw.
    press(&mut app, KeyCode::Esc);
    let shown = screen(&mut app, 120, 30);
    assert!(shown.lines().all(|line| !suspicious(line)), "{shown}");
    assert!(shown.contains("msg-\\u202egpj.exe"), "{shown}");
}

// ---------------------------------------------------------------------------------
// Keys

#[test]
fn v_is_a_key_of_the_unknown_view_in_the_footer_help_and_command_line() {
    assert!(keymap::hints(View::Unknown).contains(&("v", "verify")));
    assert!(!keymap::hints(View::Approvals).contains(&("v", "verify")));
    assert_eq!(keymap::completions(View::Unknown, "ver"), vec!["verify"]);
    assert_eq!(keymap::completions(View::Ledger, "ver"), Vec::<&str>::new());
    let help: Vec<(&str, &str)> = keymap::help(View::Unknown)
        .into_iter()
        .flat_map(|(_, items)| items)
        .collect();
    assert!(help.contains(&("v", "verify with provider")));
    assert!(help.contains(&("Enter", "settle as verify said")));

    // `:verify` runs it as v does.
    let mut app = app(table());
    ch(&mut app, ':');
    for c in "ver".chars() {
        ch(&mut app, c);
    }
    press(&mut app, KeyCode::Tab);
    let effects = press(&mut app, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![verify_effect(&app, "k-ann", "gmail-verify --account ops")]
    );
}

// ---------------------------------------------------------------------------------
// The config file

fn config(text: &str, mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    (dir, path)
}

#[test]
fn the_config_files_verify_table_is_read_by_channel() {
    let (_dir, path) = config(
        "[verify]\nemail = \"gmail-verify --account 'ops team'\"\nsms = \"twilio-verify\"\ndefault = \"generic\"\n",
        0o600,
    );
    let setup = VerifySetup::load(None, Some(path.clone()), limit());
    assert_eq!(setup.problem, None);
    let email = setup.command_for(Some("email")).unwrap();
    assert_eq!(email.argv, vec!["gmail-verify", "--account", "ops team"]);
    assert_eq!(email.from, "config.toml verify.email");
    assert_eq!(
        setup.command_for(Some("sms")).unwrap().text,
        "twilio-verify"
    );
    assert_eq!(setup.command_for(Some("fax")).unwrap().text, "generic");
    assert_eq!(setup.command_for(None).unwrap().text, "generic");
    assert!(
        setup.describe().starts_with(&format!(
            "v runs the verify command {} names for: default, email, sms",
            path.display()
        )),
        "{}",
        setup.describe()
    );
    // A missing file (not named by SEND_ONCE_CONFIG) is no config, and no problem.
    let gone = path.with_file_name("absent.toml");
    let setup = VerifySetup::load(None, Some(gone), limit());
    assert_eq!(setup.problem, None);
    assert!(setup.command_for(Some("email")).is_err());
}

#[test]
fn a_config_file_that_cannot_be_used_is_said_not_ignored_and_the_ui_still_starts() {
    let cases: Vec<(&str, u32, &str)> = vec![
        (
            "[verify]\nemail = \"gmail-verify\"\nsms = twilio\n",
            0o600,
            "not valid TOML at line 3",
        ),
        (
            "[verfy]\nemail = \"gmail-verify\"\n",
            0o600,
            "unknown field `verfy`",
        ),
        ("[verify]\nemail = 7\n", 0o600, "not valid TOML at line 2"),
        (
            "[verify]\nemail = \"gmail-verify\"\n",
            0o666,
            "others can write to it",
        ),
        // Its group can write it: as good as anyone (finding H3).
        (
            "[verify]\nemail = \"gmail-verify\"\n",
            0o620,
            "others can write to it",
        ),
        ("\u{1b}]0;x\u{7}", 0o600, "not valid TOML"),
        (
            "[verify]\nemail = \"gmail-verify 'unclosed\"\nsms = \"twilio-verify\"\n",
            0o600,
            "verify.email \"gmail-verify 'unclosed\": missing closing quote",
        ),
    ];
    for (text, mode, want) in cases {
        let (_dir, path) = config(text, mode);
        let setup = VerifySetup::load(None, Some(path.clone()), limit());
        let problem = setup.problem.clone().unwrap_or_default();
        assert!(
            problem.starts_with(&format!("config {}: ", path.display())) && problem.contains(want),
            "{text:?}: {problem}"
        );
        assert!(
            !problem.chars().any(send_once::text::is_suspicious),
            "{problem:?}"
        );
        // The rest of a table whose one line cannot be split still works.
        if want.contains("unclosed") {
            assert_eq!(
                setup.command_for(Some("sms")).unwrap().text,
                "twilio-verify"
            );
        }
        // A channel whose line is broken gets no command, not `default`'s (H4).
        if want.contains("unclosed") {
            let (_dir, with_default) = config(&format!("{text}default = \"generic\"\n"), 0o600);
            let setup = VerifySetup::load(None, Some(with_default), limit());
            assert!(
                setup.command_for(Some("email")).is_err(),
                "email fell back to default"
            );
            assert_eq!(setup.command_for(Some("fax")).unwrap().text, "generic");
        }
        // The UI opens with it said, and the help keeps saying it.
        let mut app = app(setup.clone());
        assert_eq!(status(&app), (problem.clone(), false));
        assert!(app.verify.describe().contains(&problem));
        ch(&mut app, '?');
        let shown = screen(&mut app, 100, 30);
        let flat = shown.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("✗ config"), "{shown}");
        // And v, on a channel it left without a command, says it again.
        press(&mut app, KeyCode::Esc);
        if setup.command_for(Some("email")).is_err() {
            ch(&mut app, 'v');
            assert!(status(&app).0.contains(&problem), "{}", status(&app).0);
        }
    }
}

// ---------------------------------------------------------------------------------
// Snapshots

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| view::draw(f, app, &Theme::new(false)))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let line: String = (area.left()..area.right())
            .map(|x| buffer[(x, y)].symbol())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn evidence(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn snapshot_the_answers_on_the_rows_and_happened_in_the_detail() {
    let mut app = app(table());
    ch(&mut app, ' ');
    ch(&mut app, ' ');
    ch(&mut app, 'g');
    ch(&mut app, 'v');
    answer(
        &mut app,
        "k-ann",
        CheckAnswer::Happened {
            provider_id: Some("<CAF=x1@mail.gmail.com>".into()),
            id_problem: None,
            evidence: evidence(
                json!({"messageId": "<CAF=x1@mail.gmail.com>", "subject": "Your renewal"}),
            ),
        },
    );
    insta::assert_snapshot!("verify_happened_100x30", screen(&mut app, 100, 30));
    insta::assert_snapshot!("verify_happened_80x24", screen(&mut app, 80, 24));
}

#[test]
fn snapshot_verifying_then_not_there_and_inconclusive() {
    let mut app = app(table());
    ch(&mut app, 'j');
    ch(&mut app, 'v');
    insta::assert_snapshot!("verify_running_100x30", screen(&mut app, 100, 30));
    answer(&mut app, "k-bob", CheckAnswer::NotThere);
    insta::assert_snapshot!("verify_not_there_100x30", screen(&mut app, 100, 30));
    ch(&mut app, 'v');
    answer(
        &mut app,
        "k-bob",
        CheckAnswer::inconclusive(
            "the verify command timed out after 2s and its process group was killed",
        ),
    );
    insta::assert_snapshot!("verify_inconclusive_100x30", screen(&mut app, 100, 30));
}

#[test]
fn snapshot_the_prefilled_sent_form_and_the_help() {
    let mut app = app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    press(&mut app, KeyCode::Enter);
    insta::assert_snapshot!("verify_prefilled_form_100x30", screen(&mut app, 100, 30));
    press(&mut app, KeyCode::Esc);
    ch(&mut app, '?');
    insta::assert_snapshot!("verify_help_100x30", screen(&mut app, 100, 30));
}

/// Finding H3: a config file another user owns could name any command for `v`.
#[test]
fn a_config_file_owned_by_another_user_is_not_used() {
    if !crate::harness::skip::have_root("giving a file to another user") {
        return;
    }
    let (_dir, path) = config("[verify]\nemail = \"gmail-verify\"\n", 0o644);
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let setup = VerifySetup::load(None, Some(path), limit());
    let problem = setup.problem.clone().unwrap_or_default();
    assert!(problem.contains("belongs to another user"), "{problem}");
    assert!(setup.command_for(Some("email")).is_err());
}

/// K1: `f` on a row verify found at the provider opens the failed form with an Evidence
/// field; left empty or wrong it is refused, the form kept and what to type named; with
/// the provider id typed, the confirmation says it goes against verify's answer and the
/// decision's note keeps that answer. Bulk `f` leaves such rows out and says so.
#[test]
fn f_on_a_row_verify_found_needs_the_evidence_typed_and_keeps_it_in_the_note() {
    let mut app = app(table());
    ch(&mut app, 'v');
    let seen = Seen::entry(&listed(&app, "k-ann"));
    answer(&mut app, "k-ann", happened("msg-1"));
    ch(&mut app, 'f');
    assert!(
        matches!(&form(&app).kind, FormKind::MarkFailed { key, against: Some(_), .. } if key == "k-ann"),
        "{:?}",
        form(&app).kind
    );
    assert!(
        form(&app).title.contains("type msg-1 in Evidence"),
        "{}",
        form(&app).title
    );
    assert_eq!(values(&app).last().unwrap(), &("Evidence", String::new()));

    assert_eq!(press(&mut app, KeyCode::Enter), vec![], "empty evidence");
    assert!(
        matches!(app.overlay, Some(Overlay::Form(_))),
        "the form is kept"
    );
    let said = form(&app).error.clone().unwrap_or_default();
    assert!(
        said.contains("Verify found it: marked failed, it would be sent again. To go against that, type msg-1 in Evidence."),
        "{said}"
    );
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    for c in "sent?".chars() {
        ch(&mut app, c);
    }
    assert_eq!(press(&mut app, KeyCode::Enter), vec![], "wrong evidence");
    assert!(
        matches!(app.overlay, Some(Overlay::Form(_))),
        "the form is kept"
    );
    let said = form(&app).error.clone().unwrap_or_default();
    assert!(said.contains("type msg-1 in Evidence"), "{said}");
    for _ in 0..5 {
        press(&mut app, KeyCode::Backspace);
    }
    for c in "msg-1".chars() {
        ch(&mut app, c);
    }
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        vec![],
        "a confirmation first"
    );
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {:?}", app.overlay);
    };
    assert!(
        confirm
            .lines
            .iter()
            .any(|l| l.starts_with("Against verify's answer:")),
        "{:?}",
        confirm.lines
    );
    let effects = press(&mut app, KeyCode::Enter);
    let evidence = "verify (gmail-verify --account ops) at 2026-09-27T12:00:00.000Z: it happened, provider id msg-1";
    assert_eq!(
        effects,
        vec![Effect::Resolve {
            key: "k-ann".into(),
            status: Status::Failed,
            by: "dana".into(),
            note: Some(format!("marked failed against verify's answer: {evidence}")),
            provider_id: None,
            seen,
            even_if_running: false,
            even_if_found: true,
        }]
    );
}

/// K1, in bulk: every row marked and one of them found by verify, `f` settles the
/// others and says the found one was left out.
#[test]
fn bulk_f_leaves_out_the_rows_verify_found_and_says_so() {
    let mut app = app(table());
    ch(&mut app, 'v');
    answer(&mut app, "k-ann", happened("msg-1"));
    for _ in 0..3 {
        ch(&mut app, ' ');
    }
    ch(&mut app, 'f');
    let FormKind::SettleMany { sends, .. } = &form(&app).kind else {
        panic!("{:?}", form(&app).kind);
    };
    let keys: Vec<&str> = sends.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["k-bob", "k-cat"]);
    let said = app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    assert!(said.contains("f on one asks for its evidence"), "{said}");
    assert!(
        form(&app).title.contains("(1 that verify found left out)"),
        "{}",
        form(&app).title
    );
}

/// H11: a config file that is a FIFO (nobody writing it), a symlink to `/dev/zero`, a
/// directory or a file over 1 MiB is said and not read: the screen opens at once with
/// the problem named, instead of blocking on the FIFO or filling the memory.
#[test]
fn a_config_that_is_not_a_small_regular_file_is_said_and_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let zero = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let folder = dir.path().join("folder.toml");
    std::fs::create_dir(&folder).unwrap();
    let big = dir.path().join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(1 << 20))).unwrap();
    std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (path, want) in [
        (&fifo, "not a regular file"),
        (&zero, "not a regular file"),
        (&folder, "not a regular file"),
        (&big, "larger than 1024 KiB"),
    ] {
        let setup = VerifySetup::load(None, Some(path.clone()), limit());
        let problem = setup.problem.clone().unwrap_or_default();
        assert!(
            problem.contains(want) && problem.contains("no verify command is read from it"),
            "{}: {problem}",
            path.display()
        );
        let app = app(setup);
        assert_eq!(status(&app), (problem, false));
    }
}
