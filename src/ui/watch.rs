//! The ledger's file while the UI runs: which file was opened (its device and inode),
//! whether the path still holds it, and a watcher that notices when it is deleted,
//! moved away or replaced, and opens another file at the path in its place. An SQLite
//! connection keeps writing into a deleted file without a word, and a JSON Lines
//! ledger that is gone reads as empty; both must show as gone instead.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc::UnboundedSender;

use super::action::{Action, Gone};
use super::{Backend, TICK, UiOptions, open};
use crate::ledger::Store;

/// The file a path named when it was looked at. The path may later name another file
/// (deleted and made again, or replaced by a rename), and only the inode tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileId {
    dev: u64,
    ino: u64,
}

/// A look at the file at a path, close enough to tell a file still being written (a
/// copy under way) from one that has settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Look {
    id: FileId,
    len: u64,
    modified: (i64, i64),
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

fn look(path: &Path) -> std::io::Result<Look> {
    let meta = std::fs::metadata(path)?;
    Ok(Look {
        id: FileId::of(&meta),
        len: meta.len(),
        modified: (meta.mtime(), meta.mtime_nsec()),
    })
}

/// What the ledger's path holds now, against the file opened.
enum AtPath {
    Opened,
    Missing,
    Other(Look),
    Unreadable(String),
}

fn at_path(path: &Path, opened: FileId) -> AtPath {
    match look(path) {
        Ok(now) if now.id == opened => AtPath::Opened,
        Ok(now) => AtPath::Other(now),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => AtPath::Missing,
        Err(e) => AtPath::Unreadable(e.to_string()),
    }
}

/// Why nothing may be written through the ledger opened from `path`, if the path no
/// longer holds it: a write would land in a file nobody will read again.
pub(super) fn not_there(path: &Path, opened: Option<FileId>) -> Option<String> {
    // A ledger that is not a file (Postgres) has no path to lose.
    let opened = opened?;
    match at_path(path, opened) {
        AtPath::Opened => None,
        _ => Some(format!(
            "{} is no longer the ledger file that was opened (deleted, moved or replaced)",
            path.display()
        )),
    }
}

/// A ledger opened, and which file it is.
pub(super) struct OpenedFile {
    pub(super) backend: Backend,
    /// Why the review queue is not offered, if it is not.
    pub(super) no_queue: Option<String>,
    /// The file opened; None for a ledger that is not a file.
    pub(super) file: Option<FileId>,
    held: Option<Arc<std::fs::File>>,
}

/// Opens the ledger and says which file was opened. A path that named another file
/// after the open than before it is refused rather than guessed at.
pub(super) fn open_file(options: &UiOptions) -> Result<OpenedFile, String> {
    if options.ledger.path().is_none() {
        let (backend, no_queue) = open(options).map_err(|e| e.to_string())?;
        return Ok(OpenedFile {
            backend,
            no_queue,
            file: None,
            held: None,
        });
    }
    let path = &options.file_path();
    // A JSON Lines store opens its file only while it reads or writes. Once deleted,
    // the file's inode could be given to the next file made at the path, which would
    // then pass for the file opened: held open here, it cannot be. (An SQLite
    // connection holds its own file open; a second descriptor of ours would cost it
    // its locks when closed, POSIX locks being the process's, so none is held there.)
    let held = match &options.ledger {
        crate::ledger::LedgerLocation::Jsonl(_) => std::fs::File::open(path).ok().map(Arc::new),
        _ => None,
    };
    let before = match &held {
        Some(file) => file.metadata().ok().map(|meta| FileId::of(&meta)),
        None => look(path).ok().map(|l| l.id),
    };
    let (backend, no_queue) = open(options).map_err(|e| e.to_string())?;
    let after = look(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if before != Some(after.id) {
        return Err(format!(
            "{} was replaced while it was being opened; try again",
            path.display()
        ));
    }
    Ok(OpenedFile {
        backend,
        no_queue,
        file: Some(after.id),
        held,
    })
}

/// The ledger as opened, and which opening it is.
#[derive(Clone)]
pub(super) struct Opened {
    pub(super) backend: Backend,
    /// The file opened; None for a ledger that is not a file.
    pub(super) file: Option<FileId>,
    /// The file opened, kept open while it is the ledger (see [`open_file`]).
    _held: Option<Arc<std::fs::File>>,
    pub(super) generation: u64,
}

impl Opened {
    /// The ledger `opened`, as the UI's `generation`th opening (the first is 0).
    pub(super) fn at(opened: OpenedFile, generation: u64) -> Opened {
        Opened {
            backend: opened.backend,
            file: opened.file,
            _held: opened.held,
            generation,
        }
    }
}

/// The ledger that effects run against; another file at the path, once opened,
/// takes its place.
#[derive(Clone)]
pub(super) struct Current(Arc<Mutex<Opened>>);

impl Current {
    pub(super) fn new(opened: Opened) -> Current {
        Current(Arc::new(Mutex::new(opened)))
    }

    pub(super) fn get(&self) -> Opened {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn replace(&self, opened: Opened) -> Opened {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *slot, opened)
    }
}

/// Moves the clock on, says when the ledger changed (whoever changed it), and watches
/// its path: a file deleted, moved away or replaced is reported, and another file
/// there is opened in its place once it has settled.
pub(super) struct Watcher {
    current: Current,
    options: Arc<UiOptions>,
    tx: UnboundedSender<Action>,
    /// What the app was last told is wrong with the path.
    reported: Option<Gone>,
    /// Another file seen at the path once: opened when it looks the same a tick later,
    /// so a file still being copied in is not taken for a ledger.
    settling: Option<Look>,
    /// A file that could not be opened: not tried again until it changes.
    refused: Option<Look>,
    /// The SQLite ledger's `-shm` as it was when the ledger was opened. A file moved
    /// over a live SQLite ledger keeps the old `-wal` and `-shm` beside it, and SQLite
    /// then reads (and checkpoints) the old log into the new file; opening it as well
    /// would only add this process to the mix.
    shm_at_open: Option<FileId>,
}

/// The `-shm` file next to an SQLite ledger, if there is one.
fn shm_of(options: &UiOptions) -> Option<FileId> {
    let crate::ledger::LedgerLocation::Sqlite(path) = &options.ledger else {
        return None;
    };
    let mut shm = path.clone().into_os_string();
    shm.push("-shm");
    look(Path::new(&shm)).ok().map(|l| l.id)
}

impl Watcher {
    pub(super) fn spawn(current: Current, options: Arc<UiOptions>, tx: UnboundedSender<Action>) {
        let mut watcher = Watcher {
            current,
            options,
            tx,
            reported: None,
            settling: None,
            refused: None,
            shm_at_open: None,
        };
        watcher.shm_at_open = shm_of(&watcher.options);
        tokio::spawn(async move {
            let store = watcher.current.get().backend.store;
            let mut last = store.change_marker().await.ok().flatten();
            let mut interval = tokio::time::interval(TICK);
            // Postgres tells of a change made elsewhere at once; the tick still looks
            // at the marker, which catches every commit, notified or not.
            let signal = store.change_signal();
            loop {
                match &signal {
                    Some(signal) => {
                        tokio::select! {
                            _ = interval.tick() => {}
                            () = signal.notified() => {}
                        }
                    }
                    None => {
                        interval.tick().await;
                    }
                }
                if watcher
                    .tx
                    .send(Action::Tick((watcher.options.clock)()))
                    .is_err()
                {
                    break;
                }
                let Some(store) = watcher.check_path().await else {
                    continue;
                };
                let marker = store.change_marker().await.ok().flatten();
                if marker.is_none() || marker != last {
                    last = marker;
                    if watcher.tx.send(Action::Changed).is_err() {
                        break;
                    }
                }
            }
        });
    }

    /// Looks at the path; the store to watch for changes when it holds the ledger
    /// opened.
    async fn check_path(&mut self) -> Option<Arc<dyn Store>> {
        let opened = self.current.get();
        let Some(file) = opened.file else {
            return Some(opened.backend.store);
        };
        match at_path(&self.options.file_path(), file) {
            AtPath::Opened => {
                self.settling = None;
                self.refused = None;
                if self.reported.take().is_some() {
                    let _ = self.tx.send(Action::LedgerBack { reopened: false });
                }
                Some(opened.backend.store)
            }
            AtPath::Missing => {
                self.settling = None;
                self.report(Gone::Deleted);
                None
            }
            AtPath::Unreadable(why) => {
                self.settling = None;
                self.report(Gone::Unusable(format!(
                    "its path cannot be looked at: {why}"
                )));
                None
            }
            AtPath::Other(now) if now.len == 0 => {
                // Opening an empty file would make it a ledger; it is more likely one
                // being written.
                self.settling = None;
                self.report(Gone::Unusable("the file there now is empty".into()));
                None
            }
            AtPath::Other(now) if self.refused == Some(now) => None,
            AtPath::Other(now)
                if self.shm_at_open.is_some() && shm_of(&self.options) == self.shm_at_open =>
            {
                self.settling = None;
                self.refused = Some(now);
                self.report(Gone::Unusable(
                    "another file was moved over it while its write-ahead log (-wal, -shm) was in use, so SQLite may mix the two; quit every send-once process using this ledger, then check it with send-once audit and sqlite3's pragma integrity_check before trusting it".into(),
                ));
                None
            }
            AtPath::Other(now) if self.settling == Some(now) => {
                self.settling = None;
                let generation = opened.generation;
                drop(opened);
                self.reopen(generation, now).await;
                None
            }
            AtPath::Other(now) => {
                self.settling = Some(now);
                self.report(Gone::Replaced);
                None
            }
        }
    }

    fn report(&mut self, gone: Gone) {
        if self.reported.as_ref() != Some(&gone) {
            self.reported = Some(gone.clone());
            let _ = self.tx.send(Action::LedgerGone(gone));
        }
    }

    /// Opens the file now at the path in place of the one opened before.
    async fn reopen(&mut self, generation: u64, seen: Look) {
        let options = Arc::clone(&self.options);
        let opened = tokio::task::spawn_blocking(move || open_file(&options))
            .await
            .unwrap_or_else(|e| Err(format!("could not open it: {e}")));
        match opened {
            Ok(opened) if opened.file == Some(seen.id) => {
                let old = self.current.replace(Opened::at(opened, generation + 1));
                // Closing an SQLite store waits for its writer thread.
                tokio::task::spawn_blocking(move || drop(old));
                self.reported = None;
                self.refused = None;
                self.shm_at_open = shm_of(&self.options);
                let _ = self.tx.send(Action::LedgerBack { reopened: true });
            }
            // It changed again while being opened: look again next tick.
            Ok(opened) => {
                tokio::task::spawn_blocking(move || drop(opened));
            }
            Err(why) => {
                self.refused = Some(seen);
                self.report(Gone::Unusable(format!(
                    "the file there now cannot be opened: {why}"
                )));
            }
        }
    }
}
