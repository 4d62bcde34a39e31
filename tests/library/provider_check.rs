//! The provider check protocol (precheck and verify), the Message-ID, the command
//! provider and the send options, against real child processes acting as providers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use send_once::ledger::Access;
use send_once::ledger::{Entry, Ledger, Outcome, Receipt, SendContext, SendError, canonical, lone};
use send_once::provider::{
    CheckAnswer, CheckCommand, CheckKind, CommandProvider, CommandSendError, Limit, OptionsError,
    Provider, SendOptions, message_id, split_command,
};
use send_once::stores::sqlite::SqliteStore;
use serde_json::{Map, Value, json};

use crate::harness;

/// A fake provider: a shell script, run as `sh FILE` so that no test ever executes a
/// file another test thread may still hold open for writing.
fn script(dir: &Path, name: &str, body: &str) -> Vec<String> {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write script");
    vec!["/bin/sh".into(), path.display().to_string()]
}

fn meta() -> Map<String, Value> {
    let Value::Object(meta) =
        json!({"channel": "email", "to": "ap@example.com", "intent": "invoice:7"})
    else {
        unreachable!()
    };
    meta
}

fn entry(key: &str) -> Entry {
    Entry::claim(key, "2026-01-01T00:00:00.000Z", Some(meta()))
}

async fn ask(kind: CheckKind, argv: &[String], entry: &Entry, timeout: Duration) -> CheckAnswer {
    CheckCommand {
        kind,
        argv,
        timeout: &Limit::new(timeout),
        echo_stderr: false,
    }
    .ask(entry)
    .await
}

async fn verify(dir: &Path, body: &str) -> CheckAnswer {
    let argv = script(dir, "verify.sh", body);
    ask(
        CheckKind::Verify,
        &argv,
        &entry("k-1"),
        Duration::from_secs(30),
    )
    .await
}

fn why(answer: &CheckAnswer) -> &str {
    match answer {
        CheckAnswer::Inconclusive { why } => why,
        other => panic!("expected inconclusive, got {other:?}"),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn exit_0_with_an_object_happened_and_takes_the_id_from_each_field() {
    let dir = tempfile::tempdir().unwrap();
    for field in ["providerId", "messageId", "id", "sid"] {
        let answer = verify(
            dir.path(),
            &format!("printf '{{\"{field}\": \"prov-1\", \"status\": \"delivered\"}}\\n'"),
        )
        .await;
        assert_eq!(
            answer,
            CheckAnswer::Happened {
                provider_id: Some("prov-1".into()),
                id_problem: None,
                evidence: object(json!({field: "prov-1", "status": "delivered"})),
            },
            "{field}"
        );
    }
}

#[tokio::test]
async fn the_id_fields_are_tried_in_order_and_empty_or_non_string_ones_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{"id":"i-1","providerId":"p-1"}"#, Some("p-1")),
        (r#"{"sid":"s-1","id":""}"#, Some("s-1")),
        (r#"{"id":42,"messageId":null}"#, None),
        (r#"{"found":true}"#, None),
    ];
    for (printed, want) in cases {
        let answer = verify(dir.path(), &format!("printf '%s' '{printed}'")).await;
        match answer {
            CheckAnswer::Happened {
                provider_id,
                id_problem: None,
                evidence,
            } => {
                assert_eq!(provider_id.as_deref(), want, "{printed}");
                assert_eq!(
                    Value::Object(evidence),
                    serde_json::from_str::<Value>(printed).unwrap()
                );
            }
            other => panic!("{printed}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_id_that_is_not_one_plain_short_line_is_not_taken_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(201);
    let cases = [
        (r#"{"id":"a\nb"}"#.to_owned(), "several lines"),
        (r#"{"id":"a\u001b[2Jb"}"#.to_owned(), "control characters"),
        (
            r#"{"id":"a\u202eb"}"#.to_owned(),
            "bidi, zero-width or invisible",
        ),
        (format!(r#"{{"id":"{long}"}}"#), "over 200 characters"),
    ];
    for (printed, reason) in cases {
        match verify(dir.path(), &format!("printf '%s' '{printed}'")).await {
            CheckAnswer::Happened {
                provider_id: None,
                id_problem: Some(problem),
                ..
            } => {
                assert!(problem.contains(reason), "{printed}: {problem}");
                assert!(problem.contains("\"id\""), "{problem}");
            }
            other => panic!("{printed}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn exit_1_is_not_there_whatever_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let answer = verify(
        dir.path(),
        "printf '{\"id\":\"x\"}'; echo searched >&2; exit 1",
    )
    .await;
    assert_eq!(answer, CheckAnswer::NotThere);
}

#[tokio::test]
async fn another_status_is_inconclusive_with_its_stderr_made_visible() {
    let dir = tempfile::tempdir().unwrap();
    let answer = verify(
        dir.path(),
        "printf '{\"id\":\"x\"}'; printf 'quota \\033[31mexceeded\\n' >&2; exit 2",
    )
    .await;
    let why = why(&answer);
    assert!(
        why.starts_with("the verify command exited with status 2"),
        "{why}"
    );
    assert!(why.contains("quota"), "{why}");
    assert!(
        why.contains("only 0 (it happened) and 1 (not there) are answers"),
        "{why}"
    );
    assert!(!why.contains('\u{1b}'), "raw escape in {why:?}");
}

#[tokio::test]
async fn a_check_killed_by_a_signal_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let answer = verify(dir.path(), "printf '{\"id\":\"x\"}'; kill -9 $$").await;
    assert_eq!(
        why(&answer),
        "the verify command was killed by signal 9 (SIGKILL)"
    );
}

/// A zombie has exited; whoever reaps it is not ours to wait for.
fn wait_until_gone(pid: u32) {
    harness::wait_ended(
        &format!("process {pid} to end after the check timed out"),
        pid,
        Duration::from_secs(20),
    );
}

#[tokio::test]
async fn a_check_that_hangs_is_killed_with_its_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // The grandchild lets go of the pipes, so nothing but the group kill can end it:
    // had only the direct child been killed, it would still be running.
    let argv = script(
        dir.path(),
        "hang.sh",
        &format!(
            "sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {d}/grandchild.pid.tmp && mv {d}/grandchild.pid.tmp {d}/grandchild.pid\n\
             echo $$ > {d}/child.pid.tmp && mv {d}/child.pid.tmp {d}/child.pid\nwait\n"
        ),
    );
    let answer = ask(
        CheckKind::Precheck,
        &argv,
        &entry("k-hang"),
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(
        why(&answer),
        "the precheck command timed out after 2s and was killed"
    );
    for name in ["grandchild.pid", "child.pid"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap_or_else(|_| {
            panic!("the fake check did not write {name} within its 2 s; nothing to check")
        });
        wait_until_gone(text.trim().parse().expect("a pid"));
    }
}

#[tokio::test]
async fn garbage_on_stdout_is_inconclusive_and_shown_safely() {
    let dir = tempfile::tempdir().unwrap();
    let answer = verify(dir.path(), "printf 'sent it \\033[2J ok'").await;
    let why = why(&answer);
    assert!(
        why.starts_with("the verify command exited 0 but printed something that is not JSON"),
        "{why}"
    );
    assert!(why.contains("sent it"), "{why}");
    assert!(!why.contains('\u{1b}'), "raw escape in {why:?}");
}

#[tokio::test]
async fn json_that_is_not_an_object_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    for (printed, kind) in [
        (r#"[{"id":"m-1"}]"#, "an array"),
        (r#""m-1""#, "a string"),
        ("null", "null"),
    ] {
        let answer = verify(dir.path(), &format!("printf '%s' '{printed}'")).await;
        assert_eq!(
            why(&answer),
            format!("the verify command exited 0 but printed {kind}, not a JSON object")
        );
    }
}

#[tokio::test]
async fn output_too_big_to_keep_as_evidence_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    // Over the 64 KiB of evidence, and over the 1 MiB the runner reads at all.
    for (pad, said) in [(100_000, "100021 bytes"), (2_000_000, "more than 1 MiB")] {
        let answer = verify(
            dir.path(),
            &format!(
                "printf '{{\"id\":\"m-1\",\"pad\":\"'; head -c {pad} /dev/zero | tr '\\0' a; printf '\"}}'"
            ),
        )
        .await;
        assert_eq!(
            why(&answer),
            format!(
                "the verify command exited 0 but printed {said}, more than the 64 KiB kept as evidence"
            )
        );
    }
}

#[tokio::test]
async fn nothing_or_bytes_that_are_not_text_on_stdout_are_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let answer = verify(dir.path(), "printf '  \\n'").await;
    assert!(why(&answer).contains("printed nothing"), "{answer:?}");
    let answer = verify(dir.path(), "printf '{\"id\":\"\\377\"}'").await;
    assert!(why(&answer).contains("not UTF-8"), "{answer:?}");
}

#[tokio::test]
async fn a_check_that_cannot_start_is_inconclusive() {
    let argv = vec!["/nonexistent/verify-gmail".to_owned()];
    let answer = ask(
        CheckKind::Verify,
        &argv,
        &entry("k"),
        Duration::from_secs(5),
    )
    .await;
    let why = why(&answer);
    assert!(
        why.starts_with("the verify command \"/nonexistent/verify-gmail\" could not be started"),
        "{why}"
    );
}

#[tokio::test]
async fn the_check_gets_the_key_attempt_message_id_and_the_entry_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let argv = script(
        dir.path(),
        "record.sh",
        &format!(
            "printf '%s' \"$SEND_ONCE_KEY\" > {d}/key\nprintf '%s' \"$SEND_ONCE_ATTEMPT\" > {d}/attempt\n\
             printf '%s' \"$SEND_ONCE_MESSAGE_ID\" > {d}/message-id\ncat > {d}/stdin\nexit 1\n"
        ),
    );
    // As the Node library can write it: attempt 3, and meta cut in half an emoji.
    let written = r#"{"key":"invoice 7 · café","status":"pending","attempts":3,"claimedAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z","meta":{"channel":"email","to":"ap@example.com","intent":"invoice:7","note":"cut \ud83d"}}"#;
    let pending = Entry::from_json(written).unwrap();
    let answer = ask(CheckKind::Verify, &argv, &pending, Duration::from_secs(30)).await;
    assert_eq!(answer, CheckAnswer::NotThere);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("key"), "invoice 7 · café");
    assert_eq!(read("attempt"), "3");
    assert_eq!(read("message-id"), message_id("invoice 7 · café"));
    // The entry exactly as the ledger holds it, the lone surrogate as JSON writes it.
    assert_eq!(read("stdin"), written);
}

#[tokio::test]
async fn a_command_string_is_split_into_words_and_no_shell_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let path = dir.path().join("args.sh");
    std::fs::write(
        &path,
        format!("for a in \"$@\"; do printf '%s\\n' \"$a\"; done > {d}/args\nexit 1\n"),
    )
    .unwrap();
    let line = format!(
        "/bin/sh {} --query 'in:sent to:ap@example.com newer_than:24h' $HOME ';' \"a\\\"b\"",
        path.display()
    );
    let argv = split_command("--verify", &line).unwrap();
    let answer = ask(
        CheckKind::Verify,
        &argv,
        &entry("k"),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(answer, CheckAnswer::NotThere);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("args")).unwrap(),
        "--query\nin:sent to:ap@example.com newer_than:24h\n$HOME\n;\na\"b\n"
    );

    let unclosed = split_command("--verify", "check 'in:sent").unwrap_err();
    assert!(
        unclosed.starts_with("--verify \"check 'in:sent\": "),
        "{unclosed}"
    );
    assert_eq!(
        split_command("--precheck", "   ").unwrap_err(),
        "--precheck is empty; give the command to run"
    );
}

/// What RFC 5322 allows as dot-atom-text: atext runs joined by single dots.
fn is_dot_atom_text(s: &str) -> bool {
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    !s.is_empty()
        && s.split('.')
            .all(|part| !part.is_empty() && part.chars().all(atext))
}

fn assert_valid_msg_id(id: &str) {
    let inner = id
        .strip_prefix('<')
        .and_then(|s| s.strip_suffix('>'))
        .unwrap_or_else(|| panic!("{id} is not in angle brackets"));
    let (left, right) = inner.split_once('@').expect("an @");
    assert!(is_dot_atom_text(left) && is_dot_atom_text(right), "{id}");
    assert_eq!(right, "send-once", "{id}");
    assert_eq!(left.len(), 32, "{id}");
    assert!(
        left.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{id}"
    );
}

/// A key in the internal spelling, lone surrogates included, from UTF-16 units.
fn key_from_units(units: &[u16]) -> String {
    lone::from_utf16(units)
}

proptest! {
    #[test]
    fn every_key_has_one_valid_message_id(key in any::<String>(), other in any::<String>()) {
        let id = message_id(&key);
        assert_valid_msg_id(&id);
        prop_assert_eq!(&id, &message_id(&key));
        if key != other {
            prop_assert_ne!(id, message_id(&other));
        }
    }

    #[test]
    fn keys_with_lone_surrogates_spaces_and_unicode_get_valid_ids(
        units in proptest::collection::vec(
            prop_oneof![Just(0x20u16), 0xD800u16..0xE000, 0x00E9u16..0x0100, any::<u16>()],
            1..40,
        ),
    ) {
        let key = key_from_units(&units);
        let id = message_id(&key);
        assert_valid_msg_id(&id);
        prop_assert_eq!(id, message_id(&key_from_units(&units)));
    }
}

#[test]
fn the_message_id_is_what_the_documented_derivation_gives_in_node() {
    if !harness::skip::have_tools(&[("node", "nodejs")]) {
        return;
    }
    let node = "node";
    // Keys as JSON text, so a lone surrogate reaches both sides as the same \ud83d.
    let keys = [
        r#""a""#,
        r#""invoice 7 · café""#,
        r#""cut \ud83d""#,
        r#""\udc00 lone low""#,
        r#""quote \" and \\ back""#,
        r#""ctl \u0001 \n""#,
        r#""😀""#,
        r#""0f5c5b5ad6f1a7a4c3f8e1f2b9a8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0""#,
    ];
    let program = format!(
        "const {{ createHash }} = require('crypto');\n\
         for (const key of [{}]) {{\n\
           console.log('<' + createHash('sha256').update(JSON.stringify(['send-once:message-id:v1', key])).digest('hex').slice(0, 32) + '@send-once>');\n\
         }}\n",
        keys.join(", ")
    );
    let out = std::process::Command::new(node)
        .arg("-e")
        .arg(program)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_node: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let ours: Vec<String> = keys
        .iter()
        .map(|k| match canonical::parse_json(k).unwrap().to_serde() {
            Value::String(key) => message_id(&key),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(ours, from_node);
}

fn quiet(send: Vec<String>) -> CommandProvider {
    CommandProvider {
        echo_stderr: false,
        ..CommandProvider::new(send)
    }
}

#[tokio::test]
async fn the_command_provider_sends_with_the_key_attempt_message_id_and_payload() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let send = script(
        dir.path(),
        "send.sh",
        &format!(
            "printf '%s %s %s' \"$SEND_ONCE_KEY\" \"$SEND_ONCE_ATTEMPT\" \"$SEND_ONCE_MESSAGE_ID\" > {d}/env\n\
             cat > {d}/stdin\nprintf '{{\"messageId\":\"m-9\",\"accepted\":true}}'\n"
        ),
    );
    let provider = CommandProvider {
        payload: Some(br#"{"subject":"Invoice 7"}"#.to_vec()),
        keep_result: true,
        ..quiet(send)
    };
    let receipt = provider
        .send(SendContext {
            key: "k 1".into(),
            attempt: 2,
            waited: std::time::Duration::ZERO,
        })
        .await
        .unwrap();
    assert_eq!(receipt.provider_id().as_deref(), Some("m-9"));
    assert_eq!(
        receipt.value(),
        &json!({"messageId": "m-9", "accepted": true})
    );
    assert_eq!(
        receipt.to_record(),
        Some(json!({"messageId": "m-9", "accepted": true}))
    );
    assert!(receipt.notes().is_empty());
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("env"), format!("k 1 2 {}", message_id("k 1")));
    assert_eq!(read("stdin"), r#"{"subject":"Invoice 7"}"#);
}

#[tokio::test]
async fn a_send_command_that_cannot_start_is_told_apart_from_a_failure() {
    let provider = quiet(vec!["/nonexistent/mailer".into()]);
    let context = SendContext {
        key: "k".into(),
        attempt: 1,
        waited: std::time::Duration::ZERO,
    };
    match provider.send_command(context.clone()).await {
        Err(CommandSendError::NotStarted(message)) => {
            assert!(
                message.starts_with("the send command could not be started"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Through the trait it is a definite failure: nothing can have gone out.
    assert!(matches!(
        provider.send(context).await,
        Err(SendError::Definite(_))
    ));
}

/// The entry's fields that say what a send did.
fn verdict(entry: &Value) -> Value {
    json!({
        "status": entry["status"],
        "providerId": entry.get("providerId").cloned().unwrap_or(Value::Null),
        "error": entry.get("error").cloned().unwrap_or(Value::Null),
        "uncertain": entry.get("uncertain").cloned().unwrap_or(Value::Null),
    })
}

#[tokio::test]
async fn the_command_provider_records_what_send_once_run_records() {
    let dir = tempfile::tempdir().unwrap();
    let cli_ledger = dir.path().join("cli.db");
    let lib_ledger = dir.path().join("lib.db");
    let ledger = Ledger::new(Arc::new(
        SqliteStore::open(&lib_ledger, Access::Create).unwrap(),
    ));
    let cases = [
        ("sent", "printf '{\"messageId\":\"m-1\"}'"),
        ("sent-text", "printf 'SM123\\n'"),
        ("id-with-lines", "printf '{\"id\":\"a\\\\nb\"}'"),
        ("refused", "echo 'invalid address' >&2; exit 3"),
        ("uncertain", "echo 'gateway timeout' >&2; exit 9"),
        ("signal", "kill -TERM $$"),
        ("timeout", "exec sleep 300"),
    ];
    for (key, body) in cases {
        let send = script(dir.path(), &format!("{key}.sh"), body);
        let mut args = vec![
            "run".to_owned(),
            cli_ledger.display().to_string(),
            "--key".into(),
            key.into(),
            "--failed-exit".into(),
            "3".into(),
            "--timeout".into(),
            "1s".into(),
            "--json".into(),
            "--".into(),
        ];
        args.extend(send.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = harness::output(&args);
        let from_cli = harness::entry_of(&cli_ledger, key).expect("run wrote an entry");

        let provider = CommandProvider {
            failed_exit: vec![3],
            send_timeout: Some(Limit::written(Duration::from_secs(1), "1s")),
            ..quiet(send)
        };
        let outcome = ledger
            .once(key, None, |context| provider.send(context))
            .await
            .unwrap();
        let from_lib = outcome.entry().to_value();
        assert_eq!(
            verdict(&from_lib),
            verdict(&from_cli),
            "{key}: {}",
            harness::stderr(&out)
        );
        let expected_exit = match &outcome {
            Outcome::Sent { .. } => 0,
            Outcome::Failed { .. } => 1,
            Outcome::Unknown { .. } => 3,
            Outcome::Duplicate { .. } | Outcome::Confirmed { .. } => panic!("{key} was fresh"),
        };
        assert_eq!(harness::code(&out), expected_exit, "{key}");
        if let Outcome::Sent { result, .. } = &outcome
            && key == "id-with-lines"
        {
            assert_eq!(
                result.notes(),
                [
                    "the send command's \"id\" is not an id (3 bytes, several lines); no provider id recorded"
                ]
            );
            assert!(harness::stderr(&out).contains(&result.notes()[0]));
        }
    }
}

#[tokio::test]
async fn precheck_and_verify_run_their_own_commands_and_are_inconclusive_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let provider = CommandProvider {
        precheck: Some(script(
            dir.path(),
            "pre.sh",
            "printf '{\"id\":\"already\"}'",
        )),
        ..quiet(vec!["true".into()])
    };
    let pending = entry("k");
    assert!(matches!(
        provider.precheck(&pending).await,
        CheckAnswer::Happened { provider_id: Some(id), .. } if id == "already"
    ));
    assert_eq!(
        provider.verify(&pending).await,
        CheckAnswer::Inconclusive {
            why: "no verify command was given".into()
        }
    );

    // A provider written in Rust that implements only send: both checks are the safe
    // answer, which refuses a precheck and leaves an uncertain send pending.
    struct SendOnly;
    #[async_trait::async_trait]
    impl Provider for SendOnly {
        type Receipt = ();
        async fn send(&self, _context: SendContext) -> Result<(), SendError> {
            Ok(())
        }
    }
    assert_eq!(SendOnly.precheck(&pending).await.name(), "inconclusive");
    assert_eq!(SendOnly.verify(&pending).await.name(), "inconclusive");
}

#[tokio::test]
async fn a_verify_command_whose_time_limit_is_the_check_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let provider = CommandProvider {
        verify: Some(script(dir.path(), "slow.sh", "exec sleep 300")),
        check_timeout: Limit::written(Duration::from_millis(1500), "1.5s"),
        ..quiet(vec!["true".into()])
    };
    assert_eq!(
        provider.verify(&entry("k")).await,
        CheckAnswer::Inconclusive {
            why: "the verify command timed out after 1.5s and was killed".into()
        }
    );
}

#[test]
fn a_command_provider_is_checked_before_anything_is_claimed() {
    let ok = CommandProvider {
        verify: Some(vec!["sh".into(), "-c".into(), "exit 1".into()]),
        failed_exit: vec![3, 255],
        ..CommandProvider::new(vec!["true".into()])
    };
    assert_eq!(ok.validate(), Ok(()));
    let cases = [
        (
            CommandProvider {
                failed_exit: vec![0],
                ..ok.clone()
            },
            "--failed-exit 0: exit status 0 means the send succeeded",
        ),
        (
            CommandProvider {
                failed_exit: vec![256],
                ..ok.clone()
            },
            "--failed-exit 256: no command exits with that",
        ),
        (
            CommandProvider {
                send: vec!["no-such-mailer-xyz".into()],
                ..ok.clone()
            },
            "the send command \"no-such-mailer-xyz\" was not found or is not executable",
        ),
        (
            CommandProvider {
                verify: Some(vec!["no-such-verifier-xyz".into()]),
                ..ok.clone()
            },
            "--verify: the command \"no-such-verifier-xyz\" was not found or is not executable",
        ),
        (
            CommandProvider {
                precheck: Some(Vec::new()),
                ..ok.clone()
            },
            "--precheck is empty",
        ),
        (
            CommandProvider {
                send_timeout: Some(Limit::new(Duration::ZERO)),
                ..ok.clone()
            },
            "--timeout must be longer than zero",
        ),
    ];
    for (provider, message) in cases {
        let error = provider.validate().unwrap_err();
        assert!(error.starts_with(message), "{error}");
    }
}

#[test]
fn a_limit_reads_as_a_person_would_write_it() {
    let spelt = |ms: u64| Limit::new(Duration::from_millis(ms)).written;
    assert_eq!(spelt(500), "500ms");
    assert_eq!(spelt(1500), "1500ms");
    assert_eq!(spelt(30_000), "30s");
    assert_eq!(spelt(90_000), "90s");
    assert_eq!(spelt(900_000), "15m");
    assert_eq!(spelt(7_200_000), "2h");
    assert_eq!(spelt(86_400_000), "1d");
}

#[test]
fn send_options_refuse_a_takeover_without_verify_and_zero_limits() {
    assert_eq!(
        SendOptions::builder()
            .stale_after(Duration::from_secs(600))
            .build(),
        Err(OptionsError::StaleWithoutVerify)
    );
    assert_eq!(
        SendOptions::builder().wait(Duration::ZERO).build(),
        Err(OptionsError::Zero("--wait"))
    );
    assert_eq!(
        SendOptions::builder()
            .verify(true)
            .stale_after(Duration::ZERO)
            .build(),
        Err(OptionsError::Zero("--stale-after"))
    );
    let options = SendOptions::builder()
        .meta(meta())
        .precheck(true)
        .verify(true)
        .wait(Duration::from_secs(30))
        .stale_after(Duration::from_secs(900))
        .build()
        .unwrap();
    assert_eq!(options.meta(), Some(&meta()));
    assert!(options.precheck() && options.verify());
    assert_eq!(options.wait(), Some(Duration::from_secs(30)));
    assert_eq!(options.stale_after(), Some(Duration::from_secs(900)));
    assert_eq!(SendOptions::builder().build(), Ok(SendOptions::default()));
}
