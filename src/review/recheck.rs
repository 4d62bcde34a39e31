//! Running a draft's recheck command: argv (no shell), a time limit that kills its
//! whole process group, stdout a JSON object of the current facts. Anything else is a
//! reason it "could not check", which the queue shows and dispatch refuses on.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::command::{self, Ending, SendCommand};
use crate::ledger::{canonical, duration, jsjson};
use crate::text::visible_inline;

/// How long a recheck may take unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `argv` and reads the facts it prints, or says why it could not.
pub async fn run_recheck(argv: &[String], timeout: Duration) -> Result<Map<String, Value>, String> {
    if argv.is_empty() {
        return Err("the draft has no recheck command".into());
    }
    let finished = command::run(SendCommand {
        argv,
        payload: None,
        env: Vec::new(),
        timeout: Some(timeout),
        echo_stderr: false,
    })
    .await
    .map_err(|e| {
        format!(
            "the recheck command {} could not be started: {e}",
            visible_inline(&argv[0])
        )
    })?;
    let limit = duration::format_duration(timeout.as_millis() as f64);
    if finished.how != Ending::Exited(0) {
        return Err(visible_inline(&finished.describe(Some(&limit)).replacen(
            "the command",
            "the recheck command",
            1,
        ))
        .into_owned());
    }
    if finished.stdout_truncated {
        return Err("the recheck command printed more than 1 MiB".into());
    }
    let text = String::from_utf8(finished.stdout)
        .map_err(|_| "the recheck command printed text that is not UTF-8".to_owned())?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(
            "the recheck command printed nothing; it must print the facts as a JSON object".into(),
        );
    }
    match canonical::parse_json(trimmed).map(|v| v.to_serde()) {
        Ok(Value::Object(facts)) => Ok(facts),
        Ok(other) => Err(format!(
            "the recheck command printed {}, not a JSON object of facts",
            jsjson::json_kind(&other)
        )),
        Err(e) => {
            let start: String = trimmed.chars().take(60).collect();
            Err(format!(
                "the recheck command printed something that is not JSON ({e}): {}",
                visible_inline(&start)
            ))
        }
    }
}
