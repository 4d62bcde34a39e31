//! `send-once dispatch KEY --approval FILE --payload FILE`: an approval made elsewhere
//! (the Node library's `approve()`, another review tool) checked exactly as Node's
//! `dispatch()` checks it, then sent through the same gates as `run`. The ledger can
//! be any store: no review queue is needed.

use serde_json::Value;

use send_once::approval::{self, ApprovalError, DispatchError, DispatchRequest, Dispatched};
use send_once::ledger::Access;
use send_once::ledger::{canonical, duration, jsjson, key, time};
use send_once::provider::split_command;
use send_once::review::recheck::run_recheck;
use send_once::text::visible_inline;

use super::ledger_arg::open_ledger;
use super::review::{DispatchArgs, parse_limit};
use super::run::{Gates, RunProvider, report};
use super::{Exit, display_path, fail, print_json, read_text_arg};

pub fn dispatch_approval(args: &DispatchArgs) -> Exit {
    let (Some(approval_path), Some(payload_path)) = (&args.approval, &args.payload) else {
        return fail(
            Exit::Refused,
            "--approval needs --payload: the payload it approved",
        );
    };
    if approval_path.as_os_str() == "-" && payload_path.as_os_str() == "-" {
        return fail(
            Exit::Refused,
            "--approval - and --payload - cannot both be read from stdin; give one as a file",
        );
    }
    let prepared = (|| -> Result<_, String> {
        key::check_key(&args.key).map_err(|e| e.to_string())?;
        let approval_text = read_text_arg(approval_path, "approval")?;
        let approval: Value = serde_json::from_str(&approval_text).map_err(|e| {
            format!(
                "the approval {} is not JSON: {e}",
                display_path(approval_path)
            )
        })?;
        let payload_text = read_text_arg(payload_path, "payload")?;
        let payload = canonical::parse_json(&payload_text).map_err(|e| {
            format!(
                "the payload {} is not JSON: {e}",
                display_path(payload_path)
            )
        })?;
        let recheck = args
            .recheck
            .as_deref()
            .map(|text| split_command("--recheck", text))
            .transpose()?;
        let (provider, options) =
            args.send
                .provider(&args.command, Some(payload_text.into_bytes()), None)?;
        Ok((approval, payload, recheck, provider, options))
    })();
    let (approval, payload, recheck, provider, options) = match prepared {
        Ok(prepared) => prepared,
        Err(message) => return fail(Exit::Refused, message),
    };
    let recheck_timeout = match parse_limit(&args.recheck_timeout, "--recheck-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let gates = Gates::of(&options);
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let ledger = match open_ledger(&args.ledger, Access::Create) {
            Ok(ledger) => ledger,
            Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
        };
        let provider = RunProvider::new(provider);
        let recheck = recheck
            .map(|argv| async move || run_recheck(&argv, recheck_timeout).await.map(Value::Object));
        let request = DispatchRequest {
            approval: &approval,
            payload: &payload,
            key: &args.key,
            meta: None,
            now: ledger.now() as f64,
        };
        let key = args.key.as_str();
        let before = ledger.get(key).await.ok().flatten();
        let work = approval::dispatch_with(&ledger, request, recheck, &provider, &options);
        let dispatched = match super::interrupt::unless_signalled(work).await {
            Ok(dispatched) => dispatched,
            Err(signal) => {
                return super::interrupt::report(&ledger, &args.ledger, key, before, signal).await;
            }
        };
        match dispatched {
            Ok(Dispatched::Ledger(outcome)) => report(
                &args.ledger,
                args.json,
                key,
                Ok(outcome),
                super::run::Started {
                    not_started: provider.not_started(),
                    returned: provider.returned(),
                },
                gates,
            ),
            Ok(refused) => {
                let at = send_once::ledger::time::iso_from_millis(ledger.now())
                    .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned());
                if let Some(decision) = send_once::review::dispatch::refusal_decision(
                    &refused,
                    send_once::ledger::decision::Subject::Key(key.to_owned()),
                    None,
                    at,
                ) {
                    // The log belongs to a ledger: one a JSON Lines refusal would
                    // otherwise leave a decisions file beside is made, empty, first.
                    let logged = match ledger.store().make_empty().await {
                        Ok(()) => ledger.store().append_decision(&decision).await,
                        Err(e) => Err(e),
                    };
                    match logged {
                        Ok(()) | Err(send_once::ledger::StoreError::Unsupported(_)) => {}
                        Err(e) => eprintln!(
                            "send-once: warning: the refusal could not be written to the decision log: {}",
                            visible_inline(&e.to_string())
                        ),
                    }
                }
                if args.json
                    && let Some(json) = refused.refusal_json()
                {
                    print_json(&json);
                }
                fail(Exit::Refused, refusal_text(&refused, key))
            }
            Err(DispatchError::Approval(ApprovalError::RecheckFailed(reason))) => fail(
                Exit::Refused,
                format!(
                    "not sent: could not check the facts for {}: {}",
                    visible_inline(key),
                    visible_inline(&reason)
                ),
            ),
            Err(DispatchError::Approval(e)) => fail(Exit::Refused, format!("not sent: {e}")),
            Err(DispatchError::Ledger(e)) => report(
                &args.ledger,
                args.json,
                key,
                Err(e),
                super::run::Started {
                    not_started: provider.not_started(),
                    returned: provider.returned(),
                },
                gates,
            ),
            // A kind of error this binary does not know may have come after the send:
            // a person must check (exit 3), the safe direction.
            Err(other) => fail(Exit::Unknown, other),
        }
    })
}

fn refusal_text<R>(refused: &Dispatched<R>, key: &str) -> String {
    let key = visible_inline(key);
    let text = match refused {
        Dispatched::Expired {
            expires_at,
            approved_at,
            ..
        } => format!(
            "not sent: the approval for {key} expired at {expires_at} ({}); it must be approved again",
            lasted(approved_at, expires_at)
        ),
        Dispatched::PayloadChanged {
            approved_hash,
            current_hash,
            ..
        } => format!(
            "not sent: the payload is not the one approved for {key} (approved {approved_hash}, this one {current_hash}); `send-once hash FILE` prints a payload's hash"
        ),
        Dispatched::StaleFacts { changed, .. } => format!(
            "not sent: facts changed since {key} was approved ({}); it must be approved again",
            changed_facts(changed)
        ),
        Dispatched::Ledger(_) => String::new(),
    };
    visible_inline(&text).into_owned()
}

/// How long an approval lasted, for "expired at …": "12h after it was given".
pub fn lasted(approved_at: &str, expires_at: &str) -> String {
    match (time::parse_date(approved_at), time::parse_date(expires_at)) {
        (Some(from), Some(to)) => format!(
            "{} after it was given",
            duration::format_duration((to - from) as f64)
        ),
        _ => format!("it was given at {approved_at}"),
    }
}

/// The facts that moved since an approval, "fact: before -> after; …".
pub fn changed_facts(changed: &[send_once::approval::FactChange]) -> String {
    changed
        .iter()
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c.fact,
                jsjson::stringify(&c.before),
                jsjson::stringify(&c.after)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
