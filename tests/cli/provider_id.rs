//! What a send command's reply gives as the provider id: a short single line, or the
//! id field of a JSON reply; anything else is printed whole but not kept as an id,
//! and stderr says why (finding D7).

use std::path::Path;
use std::process::Output;

use crate::harness::*;

/// `run` on a fresh ledger with a command printing `reply`; the outcome and the entry.
fn run_replying(dir: &Path, key: &str, reply: &[u8]) -> (Output, serde_json::Value) {
    let file = dir.join(format!("{key}.out"));
    std::fs::write(&file, reply).unwrap();
    let o = run_in(
        dir,
        &[
            "run",
            "L.db",
            "--key",
            key,
            "--",
            "cat",
            file.to_str().unwrap(),
        ],
    );
    expect_exit(&o, 0, key);
    assert_eq!(
        stdout(&o),
        send_once::text::visible(&String::from_utf8_lossy(reply)),
        "{key}: the reply is still printed whole"
    );
    let entry = entry_of(&dir.join("L.db"), key).expect("an entry");
    assert_eq!(entry["status"], "sent", "{key}");
    (o, entry)
}

#[test]
fn only_a_short_single_line_reply_is_taken_as_the_provider_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long_line = format!("{}\n", "x".repeat(201));
    let long_id = format!(r#"{{"providerId":"{}"}}"#, "p".repeat(300));
    let many_lines = format!(
        "line1 ok\n{}\nAuthorization: Bearer sk-live-123\n",
        "y".repeat(70_000)
    );
    let refused: [(&str, &[u8], &str); 6] = [
        (
            "two-lines",
            b"line1 ok\npassword=hunter2\n",
            "output is not an id (26 bytes, several lines)",
        ),
        (
            "long-reply",
            many_lines.as_bytes(),
            "output is not an id (70044 bytes, several lines)",
        ),
        (
            "long-line",
            long_line.as_bytes(),
            "output is not an id (202 bytes, over 200 characters)",
        ),
        (
            "control",
            b"id-1\x1b[2Jx\n",
            "output is not an id (10 bytes, control characters)",
        ),
        (
            "json-long",
            long_id.as_bytes(),
            r#""providerId" is not an id (300 bytes, over 200 characters)"#,
        ),
        (
            "json-lines",
            br#"{"id":"a\nb"}"#,
            r#""id" is not an id (3 bytes, several lines)"#,
        ),
    ];
    for (key, reply, why) in refused {
        let (o, entry) = run_replying(d, key, reply);
        assert_eq!(
            entry["providerId"],
            serde_json::Value::Null,
            "{key}: {entry}"
        );
        assert_eq!(
            stderr(&o),
            format!("send-once: the send command's {why}; no provider id recorded\n"),
            "{key}"
        );
        assert!(!entry.to_string().contains("hunter2"), "{key}");
        assert!(!entry.to_string().contains("sk-live"), "{key}");
    }
    let exactly_200 = "z".repeat(200);
    let taken: [(&str, String, &str); 4] = [
        ("plain", "  prov-1  \n".into(), "prov-1"),
        ("at-limit", format!("{exactly_200}\n"), &exactly_200),
        ("json", r#"{"messageId":"m-7","body":"a\nb"}"#.into(), "m-7"),
        ("json-pretty", "{\n  \"sid\": \"SM1\"\n}\n".into(), "SM1"),
    ];
    for (key, reply, id) in taken {
        let (o, entry) = run_replying(d, key, reply.as_bytes());
        assert_eq!(entry["providerId"], id, "{key}");
        assert_eq!(stderr(&o), "", "{key}");
    }
}
