//! The escape, bidi and zero-width corpus of RELIABILITY.md, fed through every command
//! that prints (as meta, error text, provider id, note, by, reason, payload, facts,
//! recheck output, intent and file names), with and without `--json`. Not one raw
//! control, escape, C1, bidi or zero-width character may reach stdout or stderr; each
//! `--json` output must still parse and hold the original text.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::harness::*;

/// Every kind in the corpus, in one string, each between letters so a dropped or
/// reordered character would also show.
const CORPUS: &[(&str, &str)] = &[
    ("CSI 2J", "\u{1b}[2J"),
    ("CSI A", "\u{1b}[A"),
    ("CSI 6n", "\u{1b}[6n"),
    ("OSC 0", "\u{1b}]0;pwned\u{7}"),
    (
        "OSC 8",
        "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
    ),
    ("OSC 52", "\u{1b}]52;c;ZXZpbA==\u{7}"),
    ("DCS", "\u{1b}Pq#0;2;0;0;0\u{1b}\\"),
    ("APC", "\u{1b}_apc\u{1b}\\"),
    ("ESC c", "\u{1b}c"),
    ("BEL", "\u{7}"),
    ("BS", "\u{8}"),
    ("CR", "safe\rEVIL"),
    ("lone ESC", "\u{1b}"),
    ("DEL", "\u{7f}"),
    ("C1 CSI", "\u{9b}31m"),
    ("C1 OSC", "\u{9d}0;t\u{9c}"),
    (
        "LRE RLE PDF LRO RLO",
        "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}",
    ),
    ("LRI RLI FSI PDI", "\u{2066}\u{2067}\u{2068}\u{2069}"),
    ("LRM RLM ALM", "\u{200e}\u{200f}\u{61c}"),
    (
        "ZWSP ZWNJ ZWJ WJ BOM",
        "\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}",
    ),
    ("SHY", "\u{ad}"),
];

fn hostile() -> String {
    let mut text = String::from("<");
    for (i, (_, piece)) in CORPUS.iter().enumerate() {
        text.push_str(piece);
        text.push(char::from(b'a' + i as u8));
    }
    text.push('>');
    text
}

/// Who decides in the corpus's flow: `--by` holding the corpus is refused (a name must
/// read as what it is, so one person cannot pass for two), which the end checks.
const WHO: &str = "Zoë \"ops\" <o'brien> & co";

/// The characters the corpus must never get through raw.
fn is_raw(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200b}'..='\u{200f}'
                | '\u{61c}'
                | '\u{2060}'
                | '\u{feff}'
                | '\u{ad}'
        )
}

/// Raw corpus characters in `bytes`, as (count, a few of them with where they were).
/// Bytes that are not UTF-8 count too: a lone 0x9b is CSI to an 8-bit terminal.
fn raw_in(bytes: &[u8]) -> (usize, Vec<String>) {
    let text = String::from_utf8_lossy(bytes);
    let mut count = 0;
    let mut seen = Vec::new();
    for (at, c) in text.char_indices() {
        if is_raw(c) || c == '\u{fffd}' {
            count += 1;
            if seen.len() < 5 {
                let from = text[..at]
                    .char_indices()
                    .rev()
                    .nth(20)
                    .map_or(0, |(i, _)| i);
                seen.push(format!("U+{:04X} after {:?}", c as u32, &text[from..at]));
            }
        }
    }
    (count, seen)
}

/// Does `value` hold `want` in any string or key (whole, or inside a longer text)?
fn holds(value: &Value, want: &str) -> bool {
    match value {
        Value::String(s) => s.contains(want),
        Value::Array(items) => items.iter().any(|v| holds(v, want)),
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| k.contains(want) || holds(v, want)),
        _ => false,
    }
}

struct Checker {
    h: String,
    checked: usize,
    failures: Vec<String>,
}

/// What a `--json` run's stdout must be.
#[derive(Clone, Copy, PartialEq)]
enum Json {
    /// Not JSON (text output).
    No,
    /// JSON, holding the corpus string as it went in.
    Holding,
    /// JSON; the corpus reached it only made visible (a message), or not at all.
    Parses,
}

impl Checker {
    fn check(&mut self, what: &str, out: &Output, json: Json) -> Option<Value> {
        self.checked += 1;
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let (count, seen) = raw_in(bytes);
            if count > 0 {
                self.failures.push(format!(
                    "{what}: {count} raw on {stream}: {seen:?} (exit {})",
                    code(out)
                ));
            }
        }
        if json == Json::No {
            return None;
        }
        let value: Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(e) => {
                self.failures.push(format!(
                    "{what}: stdout is not JSON ({e}): {:?}",
                    stdout(out)
                ));
                return None;
            }
        };
        if json == Json::Holding && !holds(&value, &self.h) {
            self.failures
                .push(format!("{what}: the JSON lost the original text: {value}"));
        }
        Some(value)
    }

    /// Runs `args` twice, as text and with `--json`, checking both.
    fn both(&mut self, what: &str, args: &[&str], json: Json) -> (Output, Output) {
        let text = output(args);
        self.check(what, &text, Json::No);
        // Before `--`, or it would be the send command's argument.
        let mut with_json = args.to_vec();
        let at = with_json
            .iter()
            .position(|a| *a == "--")
            .unwrap_or(with_json.len());
        with_json.insert(at, "--json");
        let as_json = output(&with_json);
        self.check(&format!("{what} --json"), &as_json, json);
        (text, as_json)
    }
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(value).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A script that prints `text` on stdout or stderr (`to` 1 or 2) and exits `status`.
fn script(dir: &Path, name: &str, text: &str, to: u8, status: i32) -> String {
    let data = dir.join(format!("{name}.out"));
    std::fs::write(&data, text).unwrap();
    let path = dir.join(format!("{name}.sh"));
    std::fs::write(
        &path,
        format!(
            "cat >/dev/null; cat '{}' >&{to}; exit {status}\n",
            data.display()
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

fn run_json(args: &[&str]) -> Value {
    let out = output(args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&out)))
}

#[test]
fn no_raw_escape_reaches_the_terminal_from_any_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let h = hostile();
    let mut c = Checker {
        h: h.clone(),
        checked: 0,
        failures: Vec::new(),
    };
    let ledger = d.join("l.db");
    let l = ledger.to_str().unwrap();
    let jsonl = d.join("l.jsonl");
    let j = jsonl.to_str().unwrap();
    // The intent in meta: `--intent` refuses control and invisible characters (a second
    // spelling of a key), so the corpus reaches the intent the entry shows through the
    // caller's meta, whose fields win over the derived ones.
    let meta = serde_json::to_string(
        &json!({"note": h.as_str(), h.as_str(): "named", "to": "a@x.com", "intent": h.as_str()}),
    )
    .unwrap();

    // run: sent, with the corpus in the provider id (a JSON reply and a plain one) and
    // in meta (its intent too); then its duplicate.
    let reply = script(
        d,
        "reply",
        &serde_json::to_string(&json!({"id": h.as_str()})).unwrap(),
        1,
        0,
    );
    let plain = script(d, "plain", &format!("{h}\n"), 1, 0);
    let stderr_unknown = script(d, "unknown", &format!("{h}\nsecond line {h}\n"), 2, 75);
    let stderr_failed = script(d, "failed", &format!("{h}\n"), 2, 22);
    for ledger in [l, j] {
        for (n, cmd, want) in [
            ("sent-json", &reply, 0),
            ("sent-plain", &plain, 0),
            ("unknown", &stderr_unknown, 3),
            ("failed", &stderr_failed, 1),
        ] {
            for json_flag in [false, true] {
                let intent = format!("{n}-{json_flag}");
                let mut args = vec![
                    "run",
                    ledger,
                    "--channel",
                    "email",
                    "--to",
                    "a@x.com",
                    "--intent",
                    &intent,
                    "--meta",
                    &meta,
                    "--failed-exit",
                    "22",
                ];
                if json_flag {
                    args.push("--json");
                }
                args.extend(["--", "sh", cmd]);
                let out = output(&args);
                let what = format!("run {n} on {ledger} (json {json_flag})");
                assert_eq!(code(&out), want, "{what}: {}", stderr(&out));
                c.check(
                    &what,
                    &out,
                    if json_flag { Json::Holding } else { Json::No },
                );
                // The duplicate (sent) or the still-unknown send, again.
                let again = output(&args);
                c.check(
                    &format!("{what}, again"),
                    &again,
                    if json_flag { Json::Holding } else { Json::No },
                );
            }
        }
    }
    // The same with the result kept, so the duplicate replays it.
    let intent = "kept";
    for json_flag in ["--keep-result", "--json"] {
        let args = [
            "run",
            l,
            "--channel",
            "email",
            "--to",
            "a@x.com",
            "--intent",
            intent,
            "--meta",
            &meta,
            "--keep-result",
            json_flag,
            "--",
            "sh",
            &reply,
        ];
        let out = output(&args);
        c.check(&format!("run --keep-result {json_flag}"), &out, Json::No);
        let again = output(&args);
        c.check(
            &format!("run --keep-result {json_flag}, duplicate"),
            &again,
            Json::No,
        );
    }
    let kept = output(&[
        "run",
        l,
        "--channel",
        "email",
        "--to",
        "a@x.com",
        "--intent",
        intent,
        "--json",
        "--",
        "true",
    ]);
    c.check(
        "run duplicate of a kept result --json",
        &kept,
        Json::Holding,
    );

    // What the ledger now holds, listed and shown.
    for ledger in [l, j] {
        c.both(
            &format!("audit {ledger}"),
            &["audit", ledger],
            Json::Holding,
        );
        c.both(&format!("ls {ledger}"), &["ls", ledger], Json::Holding);
        let pending = run_json(&["ls", ledger, "--status", "pending", "--json"]);
        let pending_keys: Vec<String> = pending
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap().to_owned())
            .collect();
        assert!(pending_keys.len() >= 2, "{pending}");
        c.both(
            &format!("show {ledger}"),
            &["show", ledger, &pending_keys[0]],
            Json::Holding,
        );

        // resolve and reset, with the corpus as who and why.
        c.both(
            &format!("resolve {ledger}"),
            &[
                "resolve",
                ledger,
                &pending_keys[0],
                "sent",
                "--by",
                WHO,
                "--note",
                &h,
                // A typed provider id is held to one plain line, as run holds a reply
                // (operator::a_provider_id_with_escapes_or_bidi_is_refused…).
                "--provider-id",
                "msg_plain_1",
            ],
            Json::Holding,
        );
        c.both(
            &format!("reset {ledger}"),
            &["reset", ledger, &pending_keys[1], "--by", WHO, "--note", &h],
            Json::Holding,
        );
        c.both(
            &format!("show {ledger} resolved"),
            &["show", ledger, &pending_keys[0]],
            Json::Holding,
        );
        c.both(
            &format!("decisions {ledger}"),
            &["decisions", ledger],
            Json::Holding,
        );
        c.both(
            &format!("gc {ledger}"),
            &["gc", ledger, "--older-than", "1d"],
            Json::Parses,
        );
    }
    let with_colour = send_once(&["audit", l])
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let mut painted = with_colour.clone();
    for sgr in [
        "\u{1b}[0m",
        "\u{1b}[1m",
        "\u{1b}[2m",
        "\u{1b}[31m",
        "\u{1b}[32m",
        "\u{1b}[33m",
    ] {
        painted.stdout = String::from_utf8(painted.stdout)
            .unwrap()
            .replace(sgr, "")
            .into_bytes();
    }
    assert!(with_colour.stdout.contains(&0x1b), "CLICOLOR_FORCE paints");
    c.check(
        "audit in colour, its own colour codes taken out",
        &painted,
        Json::No,
    );

    // key and hash.
    // Their JSON holds JSON text (the preimage, the canonical form), which escapes C0
    // controls itself: the corpus is in what that text parses to.
    let inner = |value: Option<Value>, field: &str| -> Value {
        let text = value
            .as_ref()
            .and_then(|v| v[field].as_str())
            .unwrap_or("null");
        serde_json::from_str(text).unwrap_or(Value::Null)
    };
    // `key` refuses the corpus in a field (a second spelling of a key), naming the
    // character: the refusal is what must reach the terminal safely.
    let (text, _) = c.both(
        "key",
        &[
            "key",
            "--channel",
            "email",
            "--to",
            "a@x.com",
            "--intent",
            &h,
            "--window",
            &h,
        ],
        Json::No,
    );
    assert_eq!(
        code(&text),
        2,
        "key with the corpus in --intent: {}",
        stderr(&text)
    );
    let doc = write(
        d,
        "doc.json",
        &json!({"body": h.as_str(), h.as_str(): [h.as_str(), 1]}),
    );
    let (_, hash) = c.both("hash", &["hash", &doc], Json::Parses);
    let hash = serde_json::from_slice(&hash.stdout).ok();
    assert!(
        holds(&inner(hash, "canonical"), &h),
        "hash --json canonical"
    );
    let canonical = output(&["hash", &doc, "--canonical"]);
    c.check("hash --canonical", &canonical, Json::Holding);

    // The review queue: the corpus in the payload, the facts, the meta, the recheck
    // command's output, who decides and why.
    let payload = write(
        d,
        "payload.json",
        &json!({"to": "a@x.com", "subject": h.as_str(), "body": format!("line one\n{h}")}),
    );
    let facts = write(
        d,
        "facts.json",
        &json!({"status": h.as_str(), "amount": 10}),
    );
    let drifted = write(
        d,
        "now.json",
        &json!({"status": format!("changed {h}"), "amount": 10}),
    );
    let recheck = format!("cat {drifted}");
    let garbage = script(d, "garbage", &format!("not JSON {h}\n"), 1, 0);
    let recheck_garbage = format!("sh {garbage}");
    let recheck_same = format!("cat {facts}");
    let mut drafts = Vec::new();
    for (n, recheck) in [
        ("drift", recheck.as_str()),
        ("garbage", recheck_garbage.as_str()),
        ("plain", recheck_same.as_str()),
        ("extra", recheck_same.as_str()),
    ] {
        // The corpus is in the draft's meta intent (see run above), not in `--intent`:
        // a key given as it is, because a meta may not contradict the recipient or the
        // intent a key is made from.
        let key = format!("draft-{n}");
        let args = [
            "draft",
            "submit",
            l,
            "--key",
            &key,
            "--payload",
            &payload,
            "--facts",
            &facts,
            "--recheck",
            recheck,
            "--meta",
            &meta,
            "--by",
            WHO,
        ];
        let text = output(&args);
        c.check(&format!("draft submit {n}"), &text, Json::No);
        drafts.push(stdout(&text).trim().to_owned());
        let mut revised = args.to_vec();
        revised.push("--json");
        c.check(
            &format!("draft submit {n} --json (a revision)"),
            &output(&revised),
            Json::Parses,
        );
    }
    c.both("approvals", &["approvals", l], Json::Holding);
    for id in &drafts {
        c.both(
            &format!("draft show {id}"),
            &["draft", "show", l, id],
            Json::Holding,
        );
        c.both(
            &format!("draft recheck {id}"),
            &["draft", "recheck", l, id],
            Json::Parses,
        );
        c.both(
            &format!("draft facts {id}"),
            &["draft", "facts", l, id, "--facts", &drifted],
            Json::Holding,
        );
    }
    let (drift, garbage_id, plain) = (&drafts[0], &drafts[1], &drafts[2]);
    c.check(
        "approve drift",
        &output(&["approve", l, drift, "--by", WHO, "--note", &h]),
        Json::Holding,
    );
    c.both("approval drift", &["approval", l, drift], Json::Holding);
    c.check(
        "approve drift --json (decided already)",
        &output(&["approve", l, drift, "--by", WHO, "--json"]),
        Json::Parses,
    );
    let approve_plain = output(&["approve", l, plain, "--by", WHO, "--json"]);
    c.check("approve plain --json", &approve_plain, Json::Holding);
    c.both(
        "approvals after approving",
        &["approvals", l],
        Json::Holding,
    );
    // dispatch: refused for drifted facts, refused because the recheck printed
    // garbage, and sent (its reply holding the corpus), then its duplicate.
    let (_, stale) = c.both(
        "dispatch stale facts",
        &["dispatch", l, drift, "--", "sh", &reply],
        Json::Holding,
    );
    let stale: Value = serde_json::from_slice(&stale.stdout).unwrap_or_default();
    assert_eq!(stale["outcome"], "stale_facts", "{stale}");
    c.check(
        "approve garbage",
        &output(&["approve", l, garbage_id, "--by", WHO]),
        Json::Holding,
    );
    let (garbage_text, _) = c.both(
        "dispatch recheck garbage",
        &["dispatch", l, garbage_id, "--", "sh", &reply],
        Json::Parses,
    );
    assert!(
        stderr(&garbage_text).contains("could not check"),
        "{}",
        stderr(&garbage_text)
    );
    let sent = output(&["dispatch", l, plain, "--", "sh", &reply]);
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    c.check("dispatch sent", &sent, Json::No);
    let (_, duplicate) = c.both(
        "dispatch duplicate",
        &["dispatch", l, plain, "--", "sh", &reply],
        Json::Holding,
    );
    let duplicate: Value = serde_json::from_slice(&duplicate.stdout).unwrap_or_default();
    assert_eq!(duplicate["outcome"], "duplicate", "{duplicate}");
    // The second (--json) reject is refused: it is rejected already.
    c.both(
        "reject",
        &["reject", l, garbage_id, "--reason", &h, "--by", WHO],
        Json::Parses,
    );
    let reject_json = output(&[
        "reject", l, &drafts[3], "--reason", &h, "--by", WHO, "--json",
    ]);
    c.check("reject --json", &reject_json, Json::Holding);
    c.both(
        "draft show rejected",
        &["draft", "show", l, garbage_id],
        Json::Holding,
    );
    c.both(
        "approval of a rejected draft",
        &["approval", l, garbage_id],
        Json::Parses,
    );
    c.both(
        "decisions with the queue's",
        &["decisions", l],
        Json::Holding,
    );
    c.both(
        "draft withdraw",
        &["draft", "withdraw", l, drift, "--by", WHO, "--note", &h],
        Json::Parses,
    );

    // Errors: a ledger, a key, a payload file and a flag value holding the corpus.
    let missing = d.join(format!("missing-{h}.db"));
    let missing = missing.to_str().unwrap();
    c.both("ls of a missing ledger", &["ls", missing], Json::Parses);
    c.both(
        "audit of a missing ledger",
        &["audit", missing],
        Json::Parses,
    );
    c.both("show of a missing key", &["show", l, &h], Json::Parses);
    c.both(
        "resolve of a missing key",
        &["resolve", l, &h, "sent"],
        Json::Parses,
    );
    let missing_payload = d.join(format!("missing-{h}.json"));
    c.both(
        "run with a missing payload file",
        &[
            "run",
            l,
            "--key",
            "k-missing",
            "--payload",
            missing_payload.to_str().unwrap(),
            "--",
            "true",
        ],
        Json::Holding,
    );
    c.both("a bad flag value", &["ls", l, "--status", &h], Json::No);
    c.both("an unknown command", &[&h], Json::No);
    let (text, _) = c.both(
        "approve by a name holding the corpus",
        &["approve", l, &drafts[3], "--by", &h],
        Json::Parses,
    );
    assert_eq!(
        code(&text),
        2,
        "a hostile --by is refused: {}",
        stderr(&text)
    );
    c.both(
        "approve of a missing draft",
        &["approve", missing, "1", "--by", &h],
        // The hostile --by is refused before the ledger is opened, its name shown marked.
        Json::Parses,
    );

    assert!(
        c.failures.is_empty(),
        "{} of {} outputs let raw text through or broke their JSON:\n{}",
        c.failures.len(),
        c.checked,
        c.failures.join("\n")
    );
    assert!(c.checked > 100, "only {} outputs checked", c.checked);
}

/// The checker itself: a raw character is counted, a mark is not.
#[test]
fn the_counter_sees_every_kind_and_not_its_marks() {
    for (name, piece) in CORPUS {
        assert!(raw_in(piece.as_bytes()).0 > 0, "{name} not counted");
    }
    assert_eq!(raw_in("␛[2J <U+202E> line\n\tcol".as_bytes()).0, 0);
    assert_eq!(raw_in(b"\x9b").0, 1, "a lone C1 byte counts");
}

/// The 32-byte block check `text::is_plain_ascii`, and
/// `visible` / `visible_inline` with line breaks allowed in the fast path:
/// text made of pieces that fall anywhere against the 32-byte blocks (a multi-byte
/// character across a block's end, a control as a block's first or last byte), each
/// piece a kind the terminal must never get raw.
mod text_in_blocks {
    use proptest::prelude::*;
    use send_once::text::{is_plain_ascii, is_suspicious, visible, visible_inline};

    const PIECES: &[&str] = &[
        "a",
        "Z",
        " ",
        "~",
        "!",
        "\n",
        "\t",
        "\r",
        "\u{0}",
        "\u{7}",
        "\u{8}",
        "\u{1b}",
        "\u{1b}[2J",
        "\u{1f}",
        "\u{7f}",
        "\u{80}",
        "\u{85}",
        "\u{9b}",
        "\u{9d}",
        "\u{9f}",
        "\u{a0}",
        "é",
        "€",
        "😀",
        "\u{202e}",
        "\u{2066}",
        "\u{200b}",
        "\u{feff}",
        "\u{ad}",
        "\u{2028}",
        "\u{fdd0}",
        "\u{e0041}",
        "\u{0b}",
        "\u{0c}",
    ];

    fn text_of(pieces: &[usize], lead: usize) -> String {
        let mut text = "x".repeat(lead);
        for &p in pieces {
            text.push_str(PIECES[p % PIECES.len()]);
        }
        text
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The block check answers as a byte-by-byte one, wherever the odd byte falls.
        #[test]
        fn the_block_check_is_the_byte_check(
            pieces in proptest::collection::vec(0usize..64, 0..90),
            lead in 0usize..64,
            line_breaks in proptest::bool::ANY,
        ) {
            let text = text_of(&pieces, lead);
            let by_byte = text
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) || (line_breaks && b == b'\n'));
            prop_assert_eq!(is_plain_ascii(&text, line_breaks), by_byte, "{:?}", text);
        }

        /// Nothing suspicious comes out of either; line breaks and tabs only from
        /// `visible`; and text with nothing to mark comes out as it went in.
        #[test]
        fn nothing_suspicious_comes_out(
            pieces in proptest::collection::vec(0usize..64, 0..90),
            lead in 0usize..64,
        ) {
            let text = text_of(&pieces, lead);
            let inline = visible_inline(&text);
            prop_assert!(!inline.chars().any(is_suspicious), "{:?} -> {:?}", text, inline);
            let multi = visible(&text);
            prop_assert!(
                !multi.chars().any(|c| c != '\n' && c != '\t' && is_suspicious(c)),
                "{:?} -> {:?}", text, multi
            );
            // Every line break and tab stays in `visible` and none in `visible_inline`.
            let count = |s: &str, c: char| s.chars().filter(|&x| x == c).count();
            prop_assert_eq!(count(&multi, '\n'), count(&text, '\n'));
            prop_assert_eq!(count(&multi, '\t'), count(&text, '\t'));
            prop_assert_eq!(count(&inline, '\n'), 0);
            if !text.chars().any(is_suspicious) {
                prop_assert_eq!(inline.as_ref(), text.as_str());
            }
            if !text.chars().any(|c| c != '\n' && c != '\t' && is_suspicious(c)) {
                prop_assert_eq!(multi.as_ref(), text.as_str());
            }
        }
    }

    /// Every byte value at every place of a 64-byte text (two blocks, and the remainder
    /// after one), as the only odd one.
    #[test]
    fn each_byte_in_each_place_of_two_blocks() {
        for len in [31usize, 32, 33, 63, 64, 65] {
            for place in 0..len {
                for byte in 0u8..0x80 {
                    let mut bytes = vec![b'a'; len];
                    bytes[place] = byte;
                    let text = String::from_utf8(bytes).unwrap();
                    for line_breaks in [false, true] {
                        let want = (0x20..=0x7e).contains(&byte) || (line_breaks && byte == b'\n');
                        assert_eq!(
                            is_plain_ascii(&text, line_breaks),
                            want,
                            "byte {byte:#x} at {place} of {len}, line breaks {line_breaks}"
                        );
                    }
                }
                // A two-byte character whose second byte is the next block's first.
                if place + 1 < len {
                    let mut text = "a".repeat(place);
                    text.push('é');
                    text.push_str(&"a".repeat(len - place - 1));
                    assert!(!is_plain_ascii(&text, true), "é at {place} of {len}");
                }
            }
        }
    }
}
