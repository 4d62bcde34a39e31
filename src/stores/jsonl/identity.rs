//! Which file a JSON Lines ledger's name leads to, and the lock on that file itself:
//! every name of one file (symlinks, `..`) must be one ledger, with one lock file and
//! one decision log. A file with several hard links is refused (`Files::one_name`):
//! no name of it can be told to be the one its decision log is named after.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Locks the ledger file itself (`flock`, exclusive), waiting up to `limit`: None when
/// there is no file yet (a first write makes it, under the lock file). Err(None) when
/// the limit passed; Err(Some) when the file cannot be opened or locked.
pub(super) fn lock_the_file(
    path: &Path,
    limit: Duration,
) -> Result<Option<File>, Option<std::io::Error>> {
    use std::os::fd::AsRawFd;
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Some(e)),
    };
    let deadline = Instant::now() + limit;
    let mut delay = Duration::from_millis(2);
    loop {
        // SAFETY: flock on a descriptor this function owns; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(file));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return Err(Some(e));
        }
        if Instant::now() >= deadline {
            return Err(None);
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}

/// The file `path` leads to: symlinks followed (a dangling one too, to the file it
/// names, which a first write will make) and `..` resolved, so every name of one file
/// gives one path. A path that cannot be resolved is kept as given.
pub(crate) fn resolve_file(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut current = path.to_owned();
    for _ in 0..40 {
        match std::fs::read_link(&current) {
            Ok(target) => {
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Err(_) => break,
        }
    }
    let (Some(dir), Some(name)) = (current.parent(), current.file_name()) else {
        return path.to_owned();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir)
        .map(|dir| dir.join(name))
        .unwrap_or_else(|_| path.to_owned())
}

/// Whether the file at `path` is itself a mount point: a bind mount of the file
/// (Docker's `-v ledger:/data/ledger`) gives it a second name that neither a symlink's
/// resolution nor its link count shows. Read from `/proc/self/mountinfo`; false when
/// that cannot be read.
pub(crate) fn mounted_over(path: &Path) -> bool {
    let Ok(real) = std::fs::canonicalize(path) else {
        return false;
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    // mountinfo(5): the fifth field is the mount point, with spaces as \040.
    mounts.lines().any(|line| {
        line.split(' ').nth(4).is_some_and(|point| {
            point.replace("\\040", " ").replace("\\011", "\t") == real.to_string_lossy()
        })
    })
}
