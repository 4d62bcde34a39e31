//! The review-queue fixture: a ledger with a queue (a new SQLite file in a temporary
//! directory of its own, or a Postgres URL with a temporary directory beside it), and
//! that directory for payloads, facts and send logs.
//!
//! A topic writes the steps it needs (submit, approve, dispatch, as its tests take
//! them) as a trait of its own with [`QueueFiles`] as its supertrait, default bodies
//! only, and `impl Steps for Queue {}`: the fixture is here once, the steps beside
//! the tests that read them.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

pub struct Queue {
    dir: TempDir,
    ledger: String,
}

impl Queue {
    /// A new SQLite ledger, `L.db` in a directory of its own (made on first use).
    pub fn sqlite() -> Queue {
        Queue::sqlite_named("L.db")
    }

    /// A new SQLite ledger called `name` in a directory of its own.
    pub fn sqlite_named(name: &str) -> Queue {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ledger = dir.path().join(name).display().to_string();
        Queue { dir, ledger }
    }

    /// The Postgres ledger at `url`, with a directory for the files.
    pub fn at_url(url: String) -> Queue {
        Queue {
            dir: tempfile::tempdir().expect("a temporary directory"),
            ledger: url,
        }
    }
}

/// What every topic's steps build on.
pub trait QueueFiles {
    /// The ledger as the command line takes it: a path or a URL.
    fn l(&self) -> &str;

    /// The directory of the test's files (and of the SQLite ledger).
    fn dir(&self) -> &Path;

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// Writes `text` to `name` in the directory and gives back its path.
    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path.display().to_string()
    }
}

impl QueueFiles for Queue {
    fn l(&self) -> &str {
        &self.ledger
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }
}
