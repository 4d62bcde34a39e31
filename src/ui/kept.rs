//! Edits kept when they could not be submitted: each written to a file of its own (mode
//! 0600) so nothing a person typed is lost, and named again on the way out.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

/// One file an edit that was not saved is kept in, this run.
pub(super) struct KeptFile {
    pub(super) id: i64,
    /// A digest of the text, to tell whether an edit kept in memory is in it.
    pub(super) digest: u64,
    pub(super) path: PathBuf,
    /// Why it could not be written, if it could not.
    pub(super) failed: Option<String>,
    /// Left by a UI that was killed while its editor was open, found at start.
    pub(super) left_behind: bool,
}

/// Every file an edit was kept in while the UI ran, named on stderr when it ends.
pub(super) static KEPT_FILES: Mutex<Vec<KeptFile>> = Mutex::new(Vec::new());

pub(super) fn digest(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Keeps draft `id`'s edited `text` in a file of its own ([`super::editor::keep_edit`]),
/// remembered to be named when the UI ends.
pub(super) fn keep_file(id: i64, text: &str) -> Result<PathBuf, String> {
    let kept = super::editor::keep_edit(id, text);
    let mut files = KEPT_FILES.lock().unwrap_or_else(PoisonError::into_inner);
    files.push(KeptFile {
        id,
        digest: digest(text),
        path: kept.clone().unwrap_or_default(),
        failed: kept.as_ref().err().cloned(),
        left_behind: false,
    });
    kept
}

/// The file this run kept draft `id`'s `text` in, if it did.
pub(super) fn kept_file_of(id: i64, text: &str) -> Option<PathBuf> {
    let digest = digest(text);
    KEPT_FILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|f| f.id == id && f.digest == digest && f.failed.is_none())
        .map(|f| f.path.clone())
}

/// Names on stderr every file an edit was kept in while the UI ran (the terminal is
/// the shell's again), so that nothing typed is lost once the status line is gone.
pub(super) fn name_kept_files() {
    use std::io::Write as _;
    let files = KEPT_FILES.lock().unwrap_or_else(PoisonError::into_inner);
    let mut stderr = std::io::stderr().lock();
    for file in files.iter() {
        // Not eprintln!, which panics when stderr is gone (the terminal hung up).
        let _ = match &file.failed {
            None if file.left_behind => writeln!(
                stderr,
                "send-once: the editor's file for draft {} left by a send-once tui that was killed (it may hold an edit saved after) is kept in {}",
                file.id,
                crate::text::visible_inline(&file.path.display().to_string())
            ),
            None => writeln!(
                stderr,
                "send-once: an edit of draft {} that was not saved is kept in {}",
                file.id,
                crate::text::visible_inline(&file.path.display().to_string())
            ),
            Some(why) => writeln!(
                stderr,
                "send-once: an edit of draft {} that was not saved could not be kept in a file: {}",
                file.id,
                crate::text::visible_inline(why)
            ),
        };
    }
}
