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

/// Notes that this process started a command leading session `session`, until the
/// note is dropped (the command has ended). None when it cannot be written (no
/// `/tmp`, a directory not to be trusted): the send is then seen only through its
/// claimer, and that is logged.
pub fn note_session(session: u32) -> Option<SessionNote> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if std::fs::create_dir(NOTES).is_ok() {
        let _ = std::fs::set_permissions(NOTES, std::fs::Permissions::from_mode(0o1777));
    }
    let path = note_file(std::process::id(), my_start());
    let written = trusted_directory()
        .then(|| {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                // Never through a link someone else left under this name.
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .and_then(|mut file| file.write_all(session.to_string().as_bytes()))
        })
        .and_then(Result::ok);
    if written.is_none() {
        tracing::warn!(
            directory = NOTES,
            "the send's session could not be noted: if this process is killed, a takeover cannot see the send it started"
        );
        return None;
    }
    Some(SessionNote(path))
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

/// The session the process `pid` (started at `start`) noted, when a process that has
/// not ended is still in it. The command leads a session of its own, whose id is its
/// pid: what it starts stays in it unless it calls setsid(2), a process group of its
/// own (`timeout`, a shell's job control) included. With no /proc to read it may
/// run: the safe side.
pub fn noted_session_alive(pid: u32, start: Option<u64>) -> Option<u32> {
    let session: u32 = std::fs::read_to_string(note_file(pid, start))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let live = super::live_in_session(session).is_none_or(|members| !members.is_empty());
    (session > 1 && live).then_some(session)
}
