//! Where a process notes the session of the command it started, one file per process
//! (`PID-START`), so that a send outliving a kill -9 of its claimer is still seen: the
//! session is known only after the claim is written (`ledger::claimer` reads the
//! notes). Shared by every user on the host (sticky, like `/tmp`); a file nobody
//! removed names a session that has since emptied.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const NOTES: &str = "/tmp/send-once-groups";

fn note_file(pid: u32, start: Option<u64>) -> PathBuf {
    Path::new(NOTES).join(format!("{pid}-{}", start.unwrap_or(0)))
}

/// This process's start, as a claim records it.
fn my_start() -> Option<u64> {
    static START: OnceLock<Option<u64>> = OnceLock::new();
    *START.get_or_init(|| super::start_time(std::process::id()))
}

/// What a note holds until the command is started: a send is about to start, its
/// session not known yet. Wide enough for any pid, so the session is written over it
/// in place, into space the file already has (a full disk cannot refuse it).
const STARTING: &str = "?         ";

/// Notes, before the command is started, that this process is starting a send: the
/// note is made (and its space taken) first, so that a send is never started that a
/// kill -9 of this process would leave unseen. An error, with nothing started, when it
/// cannot be written: no `/tmp`, a full disk, a directory not to be trusted.
pub fn note_starting() -> std::io::Result<StartingNote> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if std::fs::create_dir(NOTES).is_ok() {
        let _ = std::fs::set_permissions(NOTES, std::fs::Permissions::from_mode(0o1777));
    }
    let cannot = |why: String| {
        std::io::Error::other(format!(
            "the send's session could not be noted in {NOTES} ({why}), so a kill -9 of send-once would leave the send running unseen and a takeover could send again; nothing was started"
        ))
    };
    if !trusted_directory() {
        return Err(cannot(
            "the directory is not sticky, or belongs to another user: remove it, or make it as root with mode 1777".to_owned(),
        ));
    }
    let path = note_file(std::process::id(), my_start());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        // Never through a link someone else left under this name.
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .and_then(|mut file| {
            file.write_all(STARTING.as_bytes())?;
            file.sync_data()?;
            Ok(file)
        });
    match file {
        Ok(file) => Ok(StartingNote { file, path }),
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(cannot(e.to_string()))
        }
    }
}

/// A note made before its command started; [`StartingNote::started`] writes the
/// session in. Dropped unstarted, it is removed (nothing was started).
#[derive(Debug)]
pub struct StartingNote {
    file: std::fs::File,
    path: PathBuf,
}

impl StartingNote {
    /// Writes the session the command leads into the note, over the placeholder. Should
    /// that fail, the placeholder stays, and a reader takes the send as one it cannot
    /// see the end of (never as ended).
    pub fn started(mut self, session: u32) -> SessionNote {
        use std::os::unix::fs::FileExt;
        let text = format!("{session:<width$}", width = STARTING.len());
        if self.file.write_all_at(text.as_bytes(), 0).is_err() {
            tracing::warn!(
                directory = NOTES,
                "the send's session could not be written into its note; a takeover will not take it as ended"
            );
        }
        // The note is the session's now: this one no longer removes it.
        SessionNote(std::mem::take(&mut self.path))
    }
}

impl Drop for StartingNote {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether the notes' directory is one nobody else can empty of our notes or fill with
/// links: a real directory, sticky (only a file's owner removes it), owned by root or
/// by us. One made by another user without the sticky bit is not written to.
fn trusted_directory() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(NOTES) else {
        return false;
    };
    // SAFETY: geteuid(2) has no preconditions.
    let me = unsafe { libc::geteuid() };
    meta.is_dir() && meta.mode() & 0o1000 != 0 && (meta.uid() == 0 || meta.uid() == me)
}

/// Removes its note when the command it names has ended.
#[derive(Debug)]
pub struct SessionNote(PathBuf);

impl Drop for SessionNote {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What the note of the process `pid` (started at `start`) says of the send it
/// started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noted {
    /// A process of its session has not ended: the send may still be running.
    Running(u32),
    /// A send was being started, and its session was never written in: whether it
    /// runs cannot be told.
    Unknown,
    /// A session that has emptied: nothing it started is left.
    Ended,
    /// No note: nothing was started, it ended cleanly, or the note was lost. Which,
    /// the claim says ([`promised`]).
    Missing,
}

static PROMISED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that this process notes the session of every send command it starts, so its
/// claims record it: the command line does, before it claims anything.
pub fn promise() {
    PROMISED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process said it notes its sends' sessions.
pub fn promised() -> bool {
    PROMISED.load(std::sync::atomic::Ordering::Relaxed)
}

/// What `pid` (started at `start`) noted. The command leads a session of its own,
/// whose id is its pid: what it starts stays in it unless it calls setsid(2), a
/// process group of its own (`timeout`, a shell's job control) included. With no /proc
/// to read it may run: the safe side.
pub fn noted_session(pid: u32, start: Option<u64>) -> Noted {
    let Ok(text) = std::fs::read_to_string(note_file(pid, start)) else {
        return Noted::Missing;
    };
    let Ok(session) = text.trim().parse::<u32>() else {
        return Noted::Unknown;
    };
    let live = super::live_in_session(session).is_none_or(|members| !members.is_empty());
    if session > 1 && live {
        Noted::Running(session)
    } else {
        Noted::Ended
    }
}
