//! Many real `send-once run` processes on the same keys at once: every key is sent
//! exactly once, whatever the interleaving.

use std::collections::HashMap;
use std::sync::{Arc, Barrier};

use crate::harness::*;

const WORKERS: usize = 8;
const KEYS: usize = 200;

fn race_once(round: usize) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let sends = dir.path().join("sends.txt");
    let command = append_key_command(&sends);
    let keys: Vec<String> = (0..KEYS).map(|i| format!("race-{round}-{i:03}")).collect();
    let start = Arc::new(Barrier::new(WORKERS));

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (ledger, command, keys, start) = (
                ledger.clone(),
                command.clone(),
                keys.clone(),
                Arc::clone(&start),
            );
            std::thread::spawn(move || {
                // Each worker walks the keys from a different place, so every key is
                // contended by processes arriving at different moments.
                let offset = w * KEYS / WORKERS;
                start.wait();
                let mut codes = Vec::with_capacity(KEYS);
                for i in 0..KEYS {
                    let key = &keys[(i + offset) % KEYS];
                    let status = send_once(&["run", ledger.to_str().unwrap(), "--key", key, "--"])
                        .args(&command)
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status()
                        .unwrap();
                    codes.push(status.code().unwrap_or(-1));
                }
                codes
            })
        })
        .collect();
    let codes: Vec<i32> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();

    let text = std::fs::read_to_string(&sends).unwrap();
    let mut per_key: HashMap<&str, usize> = HashMap::new();
    for line in text.lines() {
        *per_key.entry(line).or_default() += 1;
    }
    let twice: Vec<_> = per_key.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(text.lines().count(), KEYS, "one line per key");
    assert_eq!(per_key.len(), KEYS);
    for key in &keys {
        assert_eq!(status_of(&ledger, key).as_deref(), Some("sent"), "{key}");
    }
    let unexpected: Vec<_> = codes.iter().filter(|c| **c != 0 && **c != 3).collect();
    assert!(
        unexpected.is_empty(),
        "exit codes other than 0 and 3: {unexpected:?}"
    );
    assert_eq!(codes.len(), WORKERS * KEYS);
}

#[test]
fn eight_processes_send_each_of_200_keys_exactly_once() {
    for round in 0..2 {
        race_once(round);
    }
}
