//! What `send-once mcp` and the proxy say on standard error while a session runs: their
//! own notes, and for the proxy what its upstream writes to its standard error.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};

use send_once::text::visible;

/// The most text held while standard error is the agent's pipe: an upstream that logs
/// for hours would otherwise grow the proxy without bound. The proxy's own notes are
/// few and always kept; the upstream's lines past this are counted and dropped.
const HELD_LIMIT: usize = 1 << 20;

/// The longest line of the upstream's standard error said whole: the rest of a longer
/// one is read and dropped, so that one line without an end cannot fill the memory.
const LINE_LIMIT: usize = 8 * 1024;

/// What the session says on standard error while it runs. When standard error is the
/// agent's own output (`2>&1`), a note written while an answer is being written would
/// land inside that answer's line and break it; such notes wait until the session's
/// output is written, and are said then.
pub(super) struct Notes {
    held: Option<Mutex<Held>>,
}

#[derive(Default)]
struct Held {
    text: Vec<String>,
    bytes: usize,
    /// The upstream's lines dropped past [`HELD_LIMIT`].
    dropped: usize,
    /// Once what was held has been said: whether the session's output was all
    /// written then (the upstream's later lines are said as they come) or not (they
    /// are dropped, as what was held was).
    said: Option<bool>,
}

impl Notes {
    pub(super) fn new() -> Arc<Notes> {
        Arc::new(Notes {
            held: send_once::mcp::stdio::stderr_is_stdout().then(Default::default),
        })
    }

    pub(super) fn say(&self, message: String) {
        let text = crate::cli::output::note_text(&message);
        match &self.held {
            Some(held) => {
                let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
                held.bytes += text.len();
                held.text.push(text);
            }
            None => write_stderr(&text),
        }
    }

    /// Says what the upstream named `upstream` wrote to its standard error, a line at a
    /// time, each after the name: read by a thread of its own, so that a standard
    /// error nobody reads holds that thread (and the upstream, as it would have held
    /// it before), never the proxy's calls. Untrusted text: made visible, as
    /// everywhere, before it can reach a terminal.
    pub(super) fn relay_upstream(
        self: &Arc<Self>,
        upstream: &str,
        errors: std::io::PipeReader,
    ) -> Relayed {
        let notes = Arc::clone(self);
        let name = upstream.to_owned();
        let (ended, end) = std::sync::mpsc::channel();
        let relay = move || {
            // Sent when the relay ends, whichever way.
            let _ended = ended;
            let mut errors = std::io::BufReader::new(errors);
            let mut line = Vec::new();
            while read_line_within(&mut errors, &mut line, LINE_LIMIT) {
                let text = String::from_utf8_lossy(&line);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                notes.said_by_upstream(visible(&format!("{name}: {text}\n")).into_owned());
            }
        };
        // Without the thread the upstream's stderr is simply not read further: the
        // upstream then waits on it, as it would on a stderr nobody reads.
        let _ = std::thread::Builder::new()
            .name("upstream-stderr".into())
            .spawn(relay);
        Relayed { end }
    }

    fn said_by_upstream(&self, text: String) {
        match &self.held {
            Some(held) => {
                let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(written) = held.said {
                    if written {
                        send_once::mcp::stdio::write_stderr_without_waiting(&text);
                    }
                } else if held.bytes + text.len() > HELD_LIMIT {
                    held.dropped += 1;
                } else {
                    held.bytes += text.len();
                    held.text.push(text);
                }
            }
            None => write_stderr(&text),
        }
    }

    /// Says what waited, now that the session has ended. Only if `written` (the
    /// session's output is all written: a note now would land inside an answer still
    /// on its way otherwise), and only as far as the pipe takes it without waiting (an
    /// agent that reads nothing would hold the process forever otherwise). What cannot
    /// be said is dropped: the ledger holds what it told.
    pub(super) fn said(&self, written: bool) {
        let Some(held) = &self.held else {
            return;
        };
        let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.said.is_some() {
            return;
        }
        held.said = Some(written);
        if !written {
            return;
        }
        if held.dropped > 0 {
            let dropped = crate::cli::output::note_text(format!(
                "{} more lines the upstream wrote to its standard error were dropped: with standard error on the agent's output they wait until the session ends, {} KiB at most",
                held.dropped,
                HELD_LIMIT / 1024
            ));
            held.text.push(dropped);
        }
        // Said with the lock held, so that a line the upstream writes meanwhile
        // comes after them.
        for text in std::mem::take(&mut held.text) {
            if !send_once::mcp::stdio::write_stderr_without_waiting(&text) {
                return;
            }
        }
    }
}

/// The relay of an upstream's standard error, to wait for its last lines.
pub(super) struct Relayed {
    end: std::sync::mpsc::Receiver<()>,
}

impl Relayed {
    /// Waits up to `limit` for the upstream's standard error to end (the upstream has
    /// exited, or been stopped), so that its last lines are said before the proxy's.
    pub(super) fn ended_within(&self, limit: std::time::Duration) {
        // Its sender is dropped, never used: the wait ends at the thread's end.
        let _ = self.end.recv_timeout(limit);
    }
}

fn write_stderr(text: &str) {
    // Nowhere is left to report a failing stderr.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Reads the next line of `from` into `line` (its end included), keeping `limit` bytes
/// of it at most and dropping the rest; false at the end of `from` or an error.
fn read_line_within(from: &mut impl BufRead, line: &mut Vec<u8>, limit: usize) -> bool {
    line.clear();
    let mut read_any = false;
    loop {
        let buffer = match from.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return read_any,
        };
        if buffer.is_empty() {
            return read_any;
        }
        read_any = true;
        let (taken, ended) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = limit.saturating_sub(line.len());
        line.extend_from_slice(&buffer[..taken.min(room)]);
        from.consume(taken);
        if ended {
            if line.last() != Some(&b'\n') {
                line.extend_from_slice("…\n".as_bytes());
            }
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_line_within;

    fn lines(input: &[u8], limit: usize) -> Vec<String> {
        let mut from = std::io::BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut all = Vec::new();
        while read_line_within(&mut from, &mut line, limit) {
            all.push(String::from_utf8_lossy(&line).into_owned());
        }
        all
    }

    #[test]
    fn lines_are_read_whole_up_to_the_limit_and_cut_past_it() {
        assert_eq!(lines(b"one\ntwo\n", 100), ["one\n", "two\n"]);
        assert_eq!(lines(b"abcdefghij\nk\n", 4), ["abcd…\n", "k\n"]);
        assert_eq!(lines(b"last without an end", 100), ["last without an end"]);
        assert_eq!(lines(b"", 100), Vec::<String>::new());
    }
}
