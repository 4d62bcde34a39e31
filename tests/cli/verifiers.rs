//! The provider check recipes in assets/verifiers/, run as real processes against fake
//! providers: a loopback HTTP server for Stripe, Postmark, Resend and Twilio, and a mailer
//! script for Gmail. Each answer of the protocol is covered: happened (exit 0, a JSON
//! object with providerId), not there (exit 1), and inconclusive (exit 2, never 1) for a
//! 500, a 401, a hang, garbage and a mailer that fails. The entries they read are made
//! by the real binary (an uncertain send, then `show --json`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use send_once::provider::message_id;
use serde_json::{Value, json};

use crate::harness;

/// One request the fake provider saw.
#[derive(Clone, Debug)]
struct Request {
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
}

enum Reply {
    Json(u16, String),
    /// Read until the client gives up, never answer: what a stuck provider does.
    Hang,
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A minimal HTTP/1.1 server on 127.0.0.1: one request per connection.
struct FakeProvider {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl FakeProvider {
    fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &*handler, &log));
            }
        });
        FakeProvider { addr, seen }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().expect("request log").clone()
    }
}

fn serve(mut stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Request>>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    log.lock().expect("request log").push(request.clone());
    match handler(&request) {
        Reply::Json(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Reply::Hang => {
            let mut sink = [0u8; 256];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        }
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let (path, raw_query) = target.split_once('?').unwrap_or((&target, ""));
    let query = raw_query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect();
    Some(Request {
        path: path.to_string(),
        query,
        headers,
    })
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("utf-8 query")
}

/// Says why and returns false when a tool the recipes need is missing (each is the
/// Debian package of its name).
fn have(tools: &[&str]) -> bool {
    let packages: Vec<(&str, &str)> = tools.iter().map(|tool| (*tool, *tool)).collect();
    crate::harness::skip::have_tools(&packages)
}

fn recipe(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/verifiers")
        .join(name)
}

/// A pending entry as the real binary writes it: an uncertain send (exit 7) with `meta`.
fn pending_entry(dir: &Path, to: &str, intent: &str, meta: Value) -> Value {
    let ledger = dir.join("ledger.db");
    let ledger = ledger.to_str().expect("utf-8 path");
    let meta = meta.to_string();
    let out = harness::output(&[
        "run",
        ledger,
        "--channel",
        "test",
        "--to",
        to,
        "--intent",
        intent,
        "--meta",
        &meta,
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    assert_eq!(harness::code(&out), 3, "{}", harness::stderr(&out));
    let key = harness::stdout(&harness::output(&[
        "key",
        "--channel",
        "test",
        "--to",
        to,
        "--intent",
        intent,
    ]))
    .trim()
    .to_string();
    let shown = harness::output(&["show", ledger, &key, "--json"]);
    assert_eq!(harness::code(&shown), 0, "{}", harness::stderr(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("show --json");
    let entry = shown["entry"].clone();
    assert_eq!(entry["status"], "pending");
    entry
}

fn key_of(entry: &Value) -> &str {
    entry["key"].as_str().expect("key")
}

/// Runs a recipe the way send-once will: the protocol's environment, the entry on stdin,
/// nothing else inherited but PATH.
fn check(script: &str, entry: &Value, env: &[(&str, &str)]) -> Output {
    let key = key_of(entry).to_string();
    let mut cmd = Command::new(recipe(script));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SEND_ONCE_KEY", &key)
        .env("SEND_ONCE_ATTEMPT", entry["attempts"].to_string())
        .env("SEND_ONCE_MESSAGE_ID", message_id(&key))
        .env("VERIFY_MAX_TIME", "2");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("recipe runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // A check may end before reading stdin (no credentials): a broken pipe is its
    // answer arriving early, not a failure.
    match stdin.write_all(entry.to_string().as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write entry: {e}"),
        _ => {}
    }
    drop(stdin);
    // A recipe whose request or mailer never ends must end on its own (curl --max-time,
    // timeout); if it does not, fail here instead of hanging the suite.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(out) => out.expect("recipe ends"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{script} did not end within 60 s: its time limit did not hold");
        }
    }
}

fn happened(out: &Output) -> Value {
    assert_eq!(
        harness::code(out),
        0,
        "stdout {} stderr {}",
        harness::stdout(out),
        harness::stderr(out)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one JSON object on stdout");
    assert!(answer.is_object(), "{answer}");
    answer
}

fn not_there(out: &Output) {
    assert_eq!(
        harness::code(out),
        1,
        "stdout {} stderr {}",
        harness::stdout(out),
        harness::stderr(out)
    );
    assert!(out.stdout.is_empty(), "{}", harness::stdout(out));
}

/// Exit 2, a message on stderr that says `why`, nothing on stdout, and no raw control
/// characters from the provider on the terminal.
fn inconclusive(out: &Output, why: &str) {
    let err = harness::stderr(out);
    assert_eq!(
        harness::code(out),
        2,
        "stdout {} stderr {err}",
        harness::stdout(out)
    );
    assert!(out.stdout.is_empty(), "{}", harness::stdout(out));
    assert!(err.contains(why), "stderr should say {why:?}: {err}");
    assert!(
        !err.chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "raw control text reached stderr: {err:?}"
    );
}

fn since_claim(entry: &Value) -> i64 {
    let at = entry["claimedAt"].as_str().expect("claimedAt");
    chrono::DateTime::parse_from_rfc3339(at)
        .expect("claimedAt is RFC 3339")
        .timestamp()
}

// ---------------------------------------------------------------- Stripe

fn stripe_env(fake: &FakeProvider) -> Vec<(&'static str, String)> {
    vec![
        ("STRIPE_API_BASE", fake.base()),
        ("STRIPE_API_KEY", "sk_test_fake".to_string()),
    ]
}

fn run_stripe(fake: &FakeProvider, entry: &Value, extra: &[(&str, &str)]) -> Output {
    let env = stripe_env(fake);
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    check("stripe-verify.sh", entry, &all)
}

fn intent(id: &str, key: &str, extra: Value) -> Value {
    let mut metadata = json!({ "send_once_key": key });
    if let (Some(m), Some(e)) = (metadata.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    json!({ "id": id, "object": "payment_intent", "status": "succeeded", "created": 1, "livemode": false, "metadata": metadata })
}

fn stripe_list(data: Vec<Value>, has_more: bool) -> Reply {
    Reply::Json(
        200,
        json!({ "object": "list", "url": "/v1/payment_intents", "has_more": has_more, "data": data })
            .to_string(),
    )
}

#[test]
fn stripe_finds_the_object_by_its_metadata_and_lists_never_searches() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "cus_Abc123", "renewal", json!({}));
    let key = key_of(&entry).to_string();
    let k = key.clone();
    let fake = FakeProvider::start(move |_| {
        stripe_list(
            vec![
                intent("pi_other", "someone-else", json!({})),
                intent("pi_ours", &k, json!({})),
            ],
            false,
        )
    });
    let answer = happened(&run_stripe(&fake, &entry, &[]));
    assert_eq!(answer["providerId"], "pi_ours");
    assert_eq!(answer["status"], "succeeded");

    let seen = fake.requests();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.path, "/v1/payment_intents", "a list read, not /search");
    assert_eq!(r.headers["authorization"], "Bearer sk_test_fake");
    assert_eq!(
        r.query["customer"], "cus_Abc123",
        "meta.to is a customer id"
    );
    let gte: i64 = r.query["created[gte]"].parse().expect("created[gte]");
    assert_eq!(
        gte,
        since_claim(&entry) - 300,
        "from the claim, less the slack"
    );
}

#[test]
fn stripe_follows_pages_and_needs_the_attempt_to_match_when_it_is_set() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "a@example.com", "invoice", json!({}));
    let k = key_of(&entry).to_string();
    let fake = FakeProvider::start(move |r| match r.query.get("starting_after") {
        None => stripe_list(vec![intent("pi_1", "x", json!({}))], true),
        Some(after) if after == "pi_1" => stripe_list(
            vec![intent("pi_2", &k, json!({ "send_once_attempt": "1" }))],
            false,
        ),
        Some(_) => Reply::Json(400, "{}".into()),
    });
    assert_eq!(
        happened(&run_stripe(&fake, &entry, &[]))["providerId"],
        "pi_2"
    );
    assert!(!fake.requests()[0].query.contains_key("customer"));

    // The same object seen from attempt 2: it was attempt 1's, so not there.
    let mut second = entry.clone();
    second["attempts"] = json!(2);
    not_there(&run_stripe(&fake, &second, &[]));

    // More pages than allowed: it could be on the next one.
    inconclusive(
        &run_stripe(&fake, &entry, &[("STRIPE_MAX_PAGES", "1")]),
        "more than 1 pages",
    );
}

#[test]
fn stripe_says_not_there_only_after_reading_every_object_since_the_claim() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "a@example.com", "invoice", json!({}));
    let fake = FakeProvider::start(|_| {
        stripe_list(
            vec![
                intent("pi_1", "another-key", json!({})),
                json!({"id": "pi_2", "metadata": {}}),
            ],
            false,
        )
    });
    not_there(&run_stripe(&fake, &entry, &[]));
}

#[test]
fn stripe_errors_hangs_and_garbage_are_inconclusive_never_not_there() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "a@example.com", "invoice", json!({}));
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::Json(
                500,
                json!({"error": {"message": "boom \u{1b}[31mred\u{202e}"}}).to_string(),
            ),
            "HTTP 500",
        ),
        (
            Reply::Json(
                401,
                json!({"error": {"message": "Invalid API Key"}}).to_string(),
            ),
            "refused the credentials (HTTP 401)",
        ),
        (Reply::Json(200, "<html>not json".into()), "not JSON"),
        (Reply::Json(200, "{\"data\": 5}".into()), "not a list"),
        (Reply::Hang, "no answer"),
    ];
    for (reply, why) in cases {
        let reply = Arc::new(Mutex::new(Some(reply)));
        let fake = FakeProvider::start(move |_| {
            reply
                .lock()
                .expect("reply")
                .take()
                .unwrap_or(Reply::Json(599, "{}".into()))
        });
        inconclusive(&run_stripe(&fake, &entry, &[]), why);
    }
    // No credentials, and nothing listening: also inconclusive.
    inconclusive(
        &check("stripe-verify.sh", &entry, &[]),
        "STRIPE_API_KEY is not set",
    );
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    inconclusive(
        &check(
            "stripe-verify.sh",
            &entry,
            &[("STRIPE_API_BASE", &base), ("STRIPE_API_KEY", "sk")],
        ),
        "could not ask",
    );
}

// ---------------------------------------------------------------- Postmark

fn run_postmark(fake: &FakeProvider, entry: &Value, extra: &[(&str, &str)]) -> Output {
    let base = fake.base();
    let mut env = vec![
        ("POSTMARK_API_BASE", base.as_str()),
        ("POSTMARK_SERVER_TOKEN", "server-token"),
    ];
    env.extend_from_slice(extra);
    check("postmark-verify.sh", entry, &env)
}

fn message(id: &str, metadata: Value, received: &str) -> Value {
    json!({
        "MessageID": id, "Tag": "welcome", "To": [{"Email": "new@example.com"}],
        "Recipients": ["new@example.com"], "ReceivedAt": received, "Status": "Sent",
        "Subject": "Welcome", "Metadata": metadata,
    })
}

fn outbound(messages: Vec<Value>, total: usize) -> Reply {
    Reply::Json(
        200,
        json!({ "TotalCount": total, "Messages": messages }).to_string(),
    )
}

#[test]
fn postmark_finds_the_message_by_recipient_tag_and_metadata() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "new@example.com", "welcome", json!({}));
    let k = key_of(&entry).to_string();
    let fake = FakeProvider::start(move |_| {
        outbound(
            vec![
                message(
                    "other-1",
                    json!({"send_once_key": "other"}),
                    "2099-01-01T00:00:00-05:00",
                ),
                message(
                    "ours-2",
                    json!({"send_once_key": k}),
                    "2099-01-01T00:00:00.123-05:00",
                ),
            ],
            2,
        )
    });
    let answer = happened(&run_postmark(&fake, &entry, &[]));
    assert_eq!(answer["providerId"], "ours-2");
    assert_eq!(answer["status"], "Sent");
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/messages/outbound");
    assert_eq!(r.query["recipient"], "new@example.com");
    assert_eq!(r.query["tag"], "welcome", "the entry's intent is the tag");
    assert_eq!(r.headers["x-postmark-server-token"], "server-token");
    assert_eq!(r.headers["accept"], "application/json");
}

#[test]
fn postmark_not_there_unless_a_message_without_the_key_could_be_this_one() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "new@example.com", "welcome", json!({}));
    // Other keys, and a message without metadata from well before the claim.
    let fake = FakeProvider::start(|_| {
        outbound(
            vec![
                message(
                    "other-1",
                    json!({"send_once_key": "other"}),
                    "2099-01-01T00:00:00-05:00",
                ),
                message("old-2", Value::Null, "2001-01-01T00:00:00-05:00"),
            ],
            2,
        )
    });
    not_there(&run_postmark(&fake, &entry, &[]));

    // A message since the claim that carries no key at all may be this send.
    let fake = FakeProvider::start(|_| {
        outbound(
            vec![message("unkeyed-3", json!({}), "2099-01-01T00:00:00-05:00")],
            1,
        )
    });
    inconclusive(&run_postmark(&fake, &entry, &[]), "unkeyed-3");

    // Pages: the second page (offset 500) holds it.
    let k = key_of(&entry).to_string();
    let fake = FakeProvider::start(move |r| {
        if r.query.get("offset").map(String::as_str) == Some("500") {
            outbound(
                vec![message(
                    "ours-9",
                    json!({"send_once_key": k}),
                    "2099-01-01T00:00:00-05:00",
                )],
                501,
            )
        } else {
            let filler = (0..500)
                .map(|i| {
                    message(
                        &format!("m{i}"),
                        json!({"send_once_key": "x"}),
                        "2099-01-01T00:00:00Z",
                    )
                })
                .collect();
            outbound(filler, 501)
        }
    });
    assert_eq!(
        happened(&run_postmark(&fake, &entry, &[]))["providerId"],
        "ours-9"
    );
}

#[test]
fn postmark_errors_hangs_and_garbage_are_inconclusive_never_not_there() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "new@example.com", "welcome", json!({}));
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::Json(500, json!({"ErrorCode": 0, "Message": "down"}).to_string()),
            "HTTP 500 down",
        ),
        (
            Reply::Json(
                401,
                json!({"ErrorCode": 10, "Message": "Bad or missing Server API token."}).to_string(),
            ),
            "refused the token (HTTP 401)",
        ),
        (Reply::Json(200, "]]]".into()), "not JSON"),
        (
            Reply::Json(200, json!({"Messages": "none"}).to_string()),
            "not a message list",
        ),
        (Reply::Hang, "no answer"),
    ];
    for (reply, why) in cases {
        let reply = Arc::new(Mutex::new(Some(reply)));
        let fake = FakeProvider::start(move |_| {
            reply
                .lock()
                .expect("reply")
                .take()
                .unwrap_or(Reply::Json(599, "{}".into()))
        });
        inconclusive(&run_postmark(&fake, &entry, &[]), why);
    }
    inconclusive(
        &check("postmark-verify.sh", &entry, &[]),
        "POSTMARK_SERVER_TOKEN is not set",
    );
}

// ---------------------------------------------------------------- Resend and Twilio

#[test]
fn resend_matches_recipient_subject_and_time() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(
        dir.path(),
        "user@example.com",
        "welcome",
        json!({"subject": "Welcome to Acme"}),
    );
    let email = |id: &str, to: &str, subject: &str, at: &str| {
        json!({"id": id, "to": [to], "from": "Acme <a@acme.test>", "created_at": at,
               "subject": subject, "last_event": "delivered"})
    };
    let list = vec![
        email(
            "e-other",
            "user@example.com",
            "Your receipt",
            "2099-01-01 00:00:00.000000+00",
        ),
        email(
            "e-ours",
            "User@Example.com",
            "re: welcome to ACME",
            "2099-01-01T00:00:00.674981+00:00",
        ),
        email(
            "e-old",
            "user@example.com",
            "Welcome to Acme",
            "2001-01-01T00:00:00+00:00",
        ),
    ];
    let body = json!({"object": "list", "has_more": false, "data": list}).to_string();
    let fake = FakeProvider::start(move |_| Reply::Json(200, body.clone()));
    let base = fake.base();
    let env = [
        ("RESEND_API_BASE", base.as_str()),
        ("RESEND_API_KEY", "re_fake"),
    ];
    let answer = happened(&check("resend-verify.sh", &entry, &env));
    assert_eq!(answer["providerId"], "e-ours");
    assert_eq!(answer["matches"], 1, "the old one is from before the claim");
    assert_eq!(
        fake.requests()[0].headers["authorization"],
        "Bearer re_fake"
    );

    let other = pending_entry(
        dir.path(),
        "user@example.com",
        "digest",
        json!({"subject": "Weekly digest"}),
    );
    not_there(&check("resend-verify.sh", &other, &env));
    let no_subject = pending_entry(dir.path(), "user@example.com", "bare", json!({}));
    inconclusive(&check("resend-verify.sh", &no_subject, &env), "no subject");
}

#[test]
fn twilio_takes_exactly_one_message_since_the_claim() {
    if !have(&["curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = pending_entry(dir.path(), "+15558675310", "code", json!({}));
    let sms = |sid: &str, to: &str, at: &str| {
        json!({"sid": sid, "to": to, "from": "+15017122661", "status": "delivered",
               "date_created": at, "date_sent": null})
    };
    let replies = Arc::new(Mutex::new(vec![
        // Several since the claim: cannot say which.
        vec![
            sms("SM2", "+15558675310", "Fri, 01 Jan 2099 00:00:00 +0000"),
            sms("SM3", "+15558675310", "Fri, 01 Jan 2099 00:01:00 +0000"),
        ],
        // None since the claim.
        vec![sms(
            "SM0",
            "+15558675310",
            "Mon, 01 Jan 2001 00:00:00 +0000",
        )],
        // Exactly one.
        vec![
            sms("SM1", "+15558675310", "Fri, 01 Jan 2099 00:00:00 +0000"),
            sms("SM0", "+15558675310", "Mon, 01 Jan 2001 00:00:00 +0000"),
        ],
    ]));
    let fake = FakeProvider::start(move |_| {
        let messages = replies.lock().expect("replies").pop().unwrap_or_default();
        Reply::Json(
            200,
            json!({"messages": messages, "next_page_uri": null}).to_string(),
        )
    });
    let base = fake.base();
    let env = [
        ("TWILIO_API_BASE", base.as_str()),
        ("TWILIO_ACCOUNT_SID", "AC123"),
        ("TWILIO_AUTH_TOKEN", "tok"),
    ];
    let answer = happened(&check("twilio-verify.sh", &entry, &env));
    assert_eq!(answer["providerId"], "SM1");
    not_there(&check("twilio-verify.sh", &entry, &env));
    inconclusive(
        &check("twilio-verify.sh", &entry, &env),
        "2 messages to this number",
    );
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/2010-04-01/Accounts/AC123/Messages.json");
    assert_eq!(r.query["To"], "+15558675310");
    // Basic auth of AC123:tok.
    assert_eq!(r.headers["authorization"], "Basic QUMxMjM6dG9r");
}

// ---------------------------------------------------------------- Gmail

/// A mailer that answers +triage from files: `rfc822msgid.json` for a Message-ID search,
/// `sent.json` for the Sent search, and logs each call's arguments. `FAKE_MAILER` picks
/// a failure instead.
fn fake_mailer(dir: &Path) -> PathBuf {
    let path = dir.join("mailer");
    let script = format!(
        r#"#!/bin/sh
d='{dir}'
printf '%s\n' "$*" >> "$d/calls"
case ${{FAKE_MAILER:-}} in
  fail) echo 'token expired' >&2; exit 4 ;;
  garbage) echo 'Not logged in'; exit 0 ;;
  hang) exec sleep 60 ;;
esac
if [ "$1" = --account ]; then printf '%s\n' "$2" >> "$d/accounts"; shift 2; fi
[ "$1" = +triage ] && [ "$2" = --query ] || exit 64
case $3 in
  rfc822msgid:*) cat "$d/rfc822msgid.json" ;;
  'in:sent '*) cat "$d/sent.json" ;;
  *) exit 65 ;;
esac
"#,
        dir = dir.display()
    );
    std::fs::write(&path, script).expect("write mailer");
    let status = Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod");
    assert!(status.success());
    path
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn gmail_finds_the_send_by_its_message_id_first() {
    if !have(&["jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mailer = fake_mailer(dir.path());
    let entry = pending_entry(
        dir.path(),
        "will@example.com",
        "morning-brief",
        json!({"subject": "Morning brief"}),
    );
    std::fs::write(
        dir.path().join("rfc822msgid.json"),
        json!([{"id": "18f0c0ffee", "to": "will@example.com", "subject": "Morning brief"}])
            .to_string(),
    )
    .expect("write");
    let env = [("SEND_ONCE_MAILER", mailer.to_str().expect("utf-8"))];
    let answer = happened(&check("gmail-verify.sh", &entry, &env));
    assert_eq!(answer["providerId"], "18f0c0ffee");
    assert_eq!(answer["matchedBy"], "rfc822msgid");
    let key = key_of(&entry);
    assert_eq!(
        calls(dir.path()),
        [format!(
            "+triage --query rfc822msgid:{} --max 20 --format json",
            message_id(key)
        )]
    );
}

#[test]
fn gmail_falls_back_to_recipient_and_subject_in_sent() {
    if !have(&["jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mailer = fake_mailer(dir.path());
    let entry = pending_entry(
        dir.path(),
        "will@example.com",
        "morning-brief",
        json!({"subject": "Morning brief"}),
    );
    std::fs::write(dir.path().join("rfc822msgid.json"), "[]").expect("write");
    let sent = json!({"messages": [
        {"id": "m-other", "to": "will@example.com", "subject": "Evening brief"},
        {"id": "m-elsewhere", "to": "ann@example.com", "subject": "Morning brief"},
        {"id": "m-ours", "to": ["Will <WILL@example.com>"], "subject": "  Re: FWD: morning BRIEF "},
    ]});
    std::fs::write(dir.path().join("sent.json"), sent.to_string()).expect("write");
    let env = [("SEND_ONCE_MAILER", mailer.to_str().expect("utf-8"))];
    let answer = happened(&check("gmail-verify.sh", &entry, &env));
    assert_eq!(answer["providerId"], "m-ours");
    assert_eq!(answer["matchedBy"], "recipient+subject");
    let made = calls(dir.path());
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(
        made[1], "+triage --query in:sent to:will@example.com newer_than:1h --max 20 --format json",
        "a window from the claim (just now) plus an hour"
    );
}

#[test]
fn gmail_not_there_after_both_searches_and_inconclusive_when_it_cannot_tell() {
    if !have(&["jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mailer = fake_mailer(dir.path());
    let mailer = mailer.to_str().expect("utf-8");
    let entry = pending_entry(
        dir.path(),
        "will@example.com",
        "morning-brief",
        json!({"subject": "Morning brief"}),
    );
    std::fs::write(dir.path().join("rfc822msgid.json"), "[]").expect("write");
    std::fs::write(
        dir.path().join("sent.json"),
        json!([{"id": "m1", "to": "will@example.com", "subject": "Something else"}]).to_string(),
    )
    .expect("write");
    not_there(&check(
        "gmail-verify.sh",
        &entry,
        &[("SEND_ONCE_MAILER", mailer)],
    ));

    // A full page without a match: the next one could hold it.
    inconclusive(
        &check(
            "gmail-verify.sh",
            &entry,
            &[("SEND_ONCE_MAILER", mailer), ("GMAIL_MAX", "1")],
        ),
        "came back full",
    );
    // The mailer fails, prints no list, or never answers; or there is no mailer.
    for (mode, why) in [
        ("fail", "failed (exit 4): token expired"),
        ("garbage", "not a list of messages"),
        ("hang", "did not answer within 2s"),
    ] {
        inconclusive(
            &check(
                "gmail-verify.sh",
                &entry,
                &[("SEND_ONCE_MAILER", mailer), ("FAKE_MAILER", mode)],
            ),
            why,
        );
    }
    inconclusive(
        &check("gmail-verify.sh", &entry, &[]),
        "SEND_ONCE_MAILER is not set",
    );
    // No subject to fall back on: only a sender that always sets the Message-ID makes
    // a miss "not there".
    let bare = pending_entry(dir.path(), "will@example.com", "bare", json!({}));
    inconclusive(
        &check("gmail-verify.sh", &bare, &[("SEND_ONCE_MAILER", mailer)]),
        "no subject",
    );
    not_there(&check(
        "gmail-verify.sh",
        &bare,
        &[("SEND_ONCE_MAILER", mailer), ("GMAIL_MESSAGE_ID_ONLY", "1")],
    ));
}

#[test]
fn gmail_reads_messages_as_send_once_mail_does_and_passes_the_account() {
    if !have(&["jq"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mailer = fake_mailer(dir.path());
    let mailer = mailer.to_str().expect("utf-8");
    let entry = pending_entry(
        dir.path(),
        "will@example.com",
        "morning-brief",
        json!({"subject": "Morning brief", "account": "ops@example.com"}),
    );
    std::fs::write(
        dir.path().join("rfc822msgid.json"),
        r#"{"resultSizeEstimate": 0}"#,
    )
    .expect("write");
    // An address that only holds this one is not it; Gmail's list of headers is read.
    let sent = json!({"messages": [
        {"id": "m-longer", "to": "sam.will@example.com", "subject": "Morning brief"},
        {"id": "m-headers", "payload": {"headers": [
            {"name": "TO", "value": "\"Doe, Will\" <Will@Example.com>"},
            {"name": "subject", "value": "Fwd: morning brief"}]}},
    ]});
    std::fs::write(dir.path().join("sent.json"), sent.to_string()).expect("write");
    let answer = happened(&check(
        "gmail-verify.sh",
        &entry,
        &[("SEND_ONCE_MAILER", mailer)],
    ));
    assert_eq!(answer["providerId"], "m-headers");
    let accounts = std::fs::read_to_string(dir.path().join("accounts")).unwrap_or_default();
    assert_eq!(
        accounts, "ops@example.com\nops@example.com\n",
        "the entry's account on both searches"
    );
    // GMAIL_ACCOUNT wins; one that is not a plain word is refused, not passed on.
    std::fs::remove_file(dir.path().join("accounts")).expect("rm");
    happened(&check(
        "gmail-verify.sh",
        &entry,
        &[
            ("SEND_ONCE_MAILER", mailer),
            ("GMAIL_ACCOUNT", "me@example.com"),
        ],
    ));
    let accounts = std::fs::read_to_string(dir.path().join("accounts")).unwrap_or_default();
    assert!(
        accounts.lines().all(|a| a == "me@example.com"),
        "{accounts}"
    );
    inconclusive(
        &check(
            "gmail-verify.sh",
            &entry,
            &[("SEND_ONCE_MAILER", mailer), ("GMAIL_ACCOUNT", "--all")],
        ),
        "not one plain word",
    );
}
