//! What `send-once mcp` and the proxy say on standard error while a session runs.

use std::sync::Arc;

/// What the session says on standard error while it runs. When standard error is the
/// agent's own output (`2>&1`), a note written while an answer is being written would
/// land inside that answer's line and break it; such notes wait until the session's
/// output is written, and are said then.
pub(super) struct Notes {
    held: Option<std::sync::Mutex<Vec<String>>>,
}

impl Notes {
    pub(super) fn new() -> Arc<Notes> {
        Arc::new(Notes {
            held: send_once::mcp::stdio::stderr_is_stdout().then(Default::default),
        })
    }

    pub(super) fn say(&self, message: String) {
        match &self.held {
            Some(held) => held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(message),
            None => crate::cli::output::note(message),
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
        let held = std::mem::take(
            &mut *held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !written {
            return;
        }
        for message in held {
            if !send_once::mcp::stdio::write_stderr_without_waiting(&crate::cli::output::note_text(
                &message,
            )) {
                return;
            }
        }
    }
}
