//! The Message-ID a send and its verifier share.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ledger::jsjson;

/// Tells this hash apart from every other sha256 of a key (the send key's own preimage
/// starts with "send-once:v1").
const DOMAIN: &str = "send-once:message-id:v1";

/// How many hex digits of the hash are kept: 128 bits, short enough to read in a
/// mail header and far from any chance of two keys sharing one.
const HEX_DIGITS: usize = 32;

/// A stable RFC 5322 `msg-id` for `key`: `<` + the first 32 hex digits of
/// `sha256(JSON.stringify(["send-once:message-id:v1", key]))` + `@send-once>`.
///
/// The input is JSON text so that any key has one well-formed spelling to hash: a lone
/// surrogate (a key the Node library wrote; see [`crate::ledger::lone`]) is hashed as
/// its `\ud83d`-style escape, exactly as JavaScript's `JSON.stringify` writes it, so Node
/// computes the same id with
/// `createHash('sha256').update(JSON.stringify(['send-once:message-id:v1', key])).digest('hex').slice(0, 32)`.
/// The result holds only hex digits, `@`, `-` and the angle brackets, so it is a
/// valid `msg-id` (dot-atom-text on both sides of the `@`) whatever the key holds.
pub fn message_id(key: &str) -> String {
    let preimage = jsjson::stringify(&Value::Array(vec![Value::from(DOMAIN), Value::from(key)]));
    let digest = hex::encode(Sha256::digest(preimage.as_bytes()));
    format!("<{}@send-once>", &digest[..HEX_DIGITS])
}
