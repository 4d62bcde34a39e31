//! What `send-once mcp` and the proxy say on standard error while a session runs: their
//! own notes, and for the proxy what its upstream writes to its standard error.

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use send_once::mcp::stdio::write_stderr_until;
use send_once::text::visible;

/// The most of the upstream's text held while standard error is the agent's pipe: an
/// upstream that logs for hours would otherwise grow the proxy without bound. Its
/// latest lines are kept (the ones that say how it ended), the earlier ones counted and
/// dropped; the session's own notes are few and always kept.
const HELD_LIMIT: usize = 1 << 20;

/// How long what was held may take to be said once the session has ended, and how long
/// one note may wait for standard error otherwise: an agent that reads its output takes
/// it well within this, and one that reads nothing does not hold the process longer.
const SAY_WITHIN: Duration = Duration::from_secs(5);

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
    /// The session's own notes: said first, since they say what became of calls.
    notes: Vec<String>,
    /// The upstream's latest lines, [`HELD_LIMIT`] bytes of them at most.
    upstream: VecDeque<String>,
    upstream_bytes: usize,
    /// The upstream's earlier lines dropped past [`HELD_LIMIT`].
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
            Some(held) => held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .notes
                .push(text),
            None => {
                write_stderr_until(&text, Some(Instant::now() + SAY_WITHIN));
            }
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
        let Some(held) = &self.held else {
            // Waiting as long as it takes holds this thread alone, and the upstream,
            // as a standard error nobody reads held it before.
            write_stderr_until(&text, None);
            return;
        };
        let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
        match held.said {
            Some(true) => {
                write_stderr_until(&text, Some(Instant::now() + SAY_WITHIN));
            }
            Some(false) => {}
            None => {
                held.upstream_bytes += text.len();
                held.upstream.push_back(text);
                while held.upstream_bytes > HELD_LIMIT {
                    let Some(earliest) = held.upstream.pop_front() else {
                        break;
                    };
                    held.upstream_bytes -= earliest.len();
                    held.dropped += 1;
                }
            }
        }
    }

    /// Says what waited, now that the session has ended: the session's notes, then the
    /// upstream's lines. Only if `written` (the session's output is all written: a note
    /// now would land inside an answer still on its way otherwise), and only for as
    /// long as [`SAY_WITHIN`] (an agent that reads nothing would hold the process
    /// forever otherwise). What cannot be said is dropped: the ledger holds what it
    /// told.
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
        let dropped = (held.dropped > 0).then(|| {
            crate::cli::output::note_text(format!(
                "the upstream wrote {} earlier lines to its standard error that were dropped: with standard error on the agent's output, its lines wait until the session ends, the latest {} KiB of them",
                held.dropped,
                HELD_LIMIT / 1024
            ))
        });
        let until = Some(Instant::now() + SAY_WITHIN);
        // Said with the lock held, so that a line the upstream writes meanwhile comes
        // after them.
        let notes = std::mem::take(&mut held.notes);
        let upstream = std::mem::take(&mut held.upstream);
        for text in notes.iter().chain(&dropped).chain(&upstream) {
            if !write_stderr_until(text, until) {
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
    pub(super) fn ended_within(&self, limit: Duration) {
        // Its sender is dropped, never used: the wait ends at the thread's end.
        let _ = self.end.recv_timeout(limit);
    }
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
