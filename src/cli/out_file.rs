//! Files the command line writes for people (`approve --out`): readable by their owner
//! only whatever the umask, and there whole or not at all. The text goes to a temporary
//! file in the same directory, is flushed to disk, and is renamed over the target, so a
//! full disk or a crash never leaves a half-written approval where a tool would read it.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use send_once::ledger::location::{is_postgres_url, redact_url};

/// A file about to be written: its temporary twin already exists, so a directory that
/// cannot take it is found out before anything else is done.
pub struct PendingFile {
    target: PathBuf,
    temp: tempfile::NamedTempFile,
}

/// Checks `--out`-style `target` and creates its temporary twin. The message names
/// what is wrong with it.
pub fn prepare(flag: &str, target: &Path) -> Result<PendingFile, String> {
    let shown = target.display().to_string();
    if is_postgres_url(&shown) {
        return Err(format!(
            "{flag} {}: that is a Postgres URL, not a file; give a file name",
            redact_url(&shown)
        ));
    }
    match std::fs::metadata(target) {
        Ok(meta) if meta.is_dir() => {
            return Err(format!("{flag} {shown} is a directory; give a file name"));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(format!(
                "{flag} {shown} is not a regular file; give a file name (without {flag} it is printed)"
            ));
        }
        _ => {}
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if target.file_name().is_none() || !dir.is_dir() {
        return Err(format!(
            "{flag} {shown}: not a file in an existing directory"
        ));
    }
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(target.file_name().unwrap_or_default());
    prefix.push(".");
    let temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| format!("{flag} {shown}: cannot write in {}: {e}", dir.display()))?;
    Ok(PendingFile {
        target: target.to_owned(),
        temp,
    })
}

impl PendingFile {
    /// Writes `text`, flushes it to disk and puts it in place. On any error the
    /// temporary file is removed and the target is as it was.
    pub fn commit(mut self, text: &str) -> std::io::Result<()> {
        self.temp.write_all(text.as_bytes())?;
        self.temp.as_file().sync_all()?;
        self.temp.persist(&self.target).map_err(|e| e.error)?;
        // The rename is durable only once the directory is.
        let dir = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}
