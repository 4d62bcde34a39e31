//! An agent's "send an e-mail" tool written in Rust, with the gates the CLI has.
//!
//! The provider here is a stand-in you can run anywhere: an outbox directory where
//! every accepted message is a file named after its Message-ID, as a real provider's
//! API would keep a record you can look up. Swap `Outbox` for your provider's client;
//! keep the shape: `send` says definite or uncertain, `precheck` and `verify` look the
//! message up by the stable Message-ID the ledger gives it.
//!
//! ```text
//! cargo run --example agent_tool -- /tmp/agent.db /tmp/outbox ana@example.com "Invoice 1042"
//! ```
//!
//! Run it twice: the second run is a duplicate and sends nothing. Exit codes are the
//! CLI's: 0 sent or already sent, 1 failed, 2 refused, 3 unknown (a person must check).

use std::path::PathBuf;
use std::process::ExitCode;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use send_once::ledger::key::send_key;
use send_once::ledger::{Entry, Ledger, LedgerError, Outcome, SendContext, SendError};
use send_once::provider::{CheckAnswer, Provider, SendOptions, message_id};

/// The stand-in provider: one JSON file per accepted message.
struct Outbox {
    dir: PathBuf,
    to: String,
    subject: String,
}

impl Outbox {
    fn record_path(&self, key: &str) -> PathBuf {
        // The Message-ID is `<hex@send-once>`: keep the hex for a file name.
        let id = message_id(key);
        let name: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// Looks the message up by its Message-ID, as a verifier searches a mailbox.
    fn look_up(&self, key: &str) -> CheckAnswer {
        match std::fs::read_to_string(self.record_path(key)) {
            Ok(text) => match serde_json::from_str::<Map<String, Value>>(&text) {
                Ok(record) => CheckAnswer::Happened {
                    provider_id: record.get("id").and_then(Value::as_str).map(str::to_owned),
                    id_problem: None,
                    evidence: record,
                },
                Err(e) => CheckAnswer::inconclusive(format!("the outbox record is damaged: {e}")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CheckAnswer::NotThere,
            Err(e) => CheckAnswer::inconclusive(format!("the outbox cannot be read: {e}")),
        }
    }
}

#[async_trait]
impl Provider for Outbox {
    type Receipt = Value;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        self.look_up(entry.key())
    }

    async fn send(&self, context: SendContext) -> Result<Value, SendError> {
        if !self.to.contains('@') {
            // The provider refused it for certain: recorded as failed, may be retried.
            return Err(SendError::definite(format!(
                "{:?} is not an address",
                self.to
            )));
        }
        let record = json!({
            "id": format!("msg-{}-{}", &message_id(&context.key)[1..9], context.attempt),
            "messageId": message_id(&context.key),
            "to": self.to,
            "subject": self.subject,
        });
        std::fs::write(self.record_path(&context.key), record.to_string())
            // It may or may not have been written: the ledger keeps it pending, and
            // verify (or a person) settles it. Never a blind retry.
            .map_err(|e| SendError::uncertain(format!("the outbox write failed: {e}")))?;
        Ok(record)
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        self.look_up(entry.key())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [ledger_path, outbox, to, subject] = args.as_slice() else {
        eprintln!("usage: agent_tool LEDGER OUTBOX_DIR TO SUBJECT");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(outbox) {
        eprintln!("cannot create {outbox}: {e}");
        return ExitCode::from(2);
    }
    let ledger = match Ledger::open(ledger_path) {
        Ok(ledger) => ledger,
        Err(e) => {
            eprintln!("cannot open the ledger: {e}");
            return ExitCode::from(2);
        }
    };
    // The same key for the same intent, whoever computes it (the Node library too).
    let key = match send_key("email", to, &format!("invoice:{subject}"), None) {
        Ok(key) => key,
        Err(e) => {
            eprintln!("no key: {e}");
            return ExitCode::from(2);
        }
    };
    let provider = Outbox {
        dir: outbox.into(),
        to: to.clone(),
        subject: subject.clone(),
    };
    let mut meta = Map::new();
    meta.insert("channel".into(), "email".into());
    meta.insert("to".into(), to.as_str().into());
    meta.insert("intent".into(), subject.as_str().into());
    let options = SendOptions::builder()
        .meta(meta)
        .precheck(true)
        .verify(true)
        .build()
        .expect("precheck and verify without a takeover are always valid");

    match ledger.once_with(&key, &provider, &options).await {
        Ok(Outcome::Sent { result, .. }) => {
            println!("sent: {result}");
            ExitCode::SUCCESS
        }
        Ok(Outcome::Duplicate { entry }) => {
            println!(
                "already sent at {}",
                entry.get("sentAt").unwrap_or(&Value::Null)
            );
            ExitCode::SUCCESS
        }
        Ok(Outcome::Confirmed { gate, .. }) => {
            println!(
                "already in the outbox ({}): recorded as sent",
                gate.command_name()
            );
            ExitCode::SUCCESS
        }
        Ok(Outcome::Failed { error, .. }) => {
            eprintln!("failed: {error}");
            ExitCode::from(1)
        }
        Ok(Outcome::Unknown { entry, .. }) => {
            eprintln!(
                "unknown since {}: a person must check the outbox, then `send-once resolve {ledger_path} {key} sent|failed`",
                entry.claimed_at()
            );
            ExitCode::from(3)
        }
        Err(LedgerError::PrecheckInconclusive { why, .. }) => {
            eprintln!("refused: {why}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("could not run: {e}");
            ExitCode::from(2)
        }
    }
}
