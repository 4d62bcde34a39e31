//! The one place a ledger's location becomes its stores: an SQLite file, a JSON Lines
//! file, or a Postgres server, and the review queue where the ledger keeps one. It sits
//! above the ledger and the review queue (a queue store is the review's trait, and an
//! SQL store is both), so neither imports the other to be opened; the location itself
//! ([`LedgerLocation`]: parsing, kinds, redaction) stays in the ledger, below.
//!
//! Every command and the TUI open a ledger through [`Open`]:
//! `use send_once::open::Open;` then `location.open(Access::ReadWrite)`.

use std::future::Future;
use std::sync::Arc;

use crate::ledger::{Access, LedgerLocation, Store, StoreError};
use crate::review::store::QueueStore;
use crate::stores::jsonl::JsonlStore;
use crate::stores::sqlite::SqliteStore;

/// Opening a [`LedgerLocation`]: checked, then made into its stores.
pub trait Open {
    /// Refuses, before anything is opened, what no command can use: a Postgres URL
    /// (no store yet), a directory, something that is not a regular file (`/dev/null`,
    /// a FIFO, a device: SQLite would report "disk I/O error", and reading a FIFO
    /// waits for a writer forever), and a missing ledger unless `access` may create it.
    fn check(&self, access: Access) -> Result<(), StoreError>;

    /// Opens the store. Only `Access::Create` makes a missing ledger.
    fn open_store(&self, access: Access) -> Result<Arc<dyn Store>, StoreError>;

    /// Opens the store and, where the ledger keeps one, its review queue.
    fn open(&self, access: Access) -> Result<OpenedLedger, StoreError>;

    /// Opens the store of a ledger that keeps a review queue, for what needs the
    /// queue: a ledger that keeps none (JSON Lines) is refused before it is opened.
    fn open_queue(&self, access: Access) -> Result<Arc<dyn QueueStore>, StoreError>;

    /// Opens an existing ledger to look at and, where it can, to write (the TUI):
    /// on a read-only filesystem or a full disk a ledger that can be opened read-only
    /// is, and its writes say why they are refused.
    fn open_to_look(&self) -> Result<OpenedLedger, StoreError>;

    /// Makes an empty ledger here when nothing is here (`send-once init`). A ledger
    /// that is already here is only read, to be sure it is one, and left exactly as it
    /// is; anything else (a directory, a file that is not a ledger) is refused.
    fn init(&self) -> impl Future<Output = Result<Init, StoreError>> + Send + '_;
}

impl Open for LedgerLocation {
    fn check(&self, access: Access) -> Result<(), StoreError> {
        let path = match self {
            // Whether the server and its tables are there is the connection's to find.
            #[cfg(feature = "postgres")]
            LedgerLocation::Postgres(_) => return Ok(()),
            #[cfg(not(feature = "postgres"))]
            LedgerLocation::Postgres(_) => {
                return Err(StoreError::PostgresNotSupported(self.clone()));
            }
            LedgerLocation::Sqlite(path) | LedgerLocation::Jsonl(path) => path,
        };
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => Err(StoreError::IsDirectory(self.clone())),
            Ok(meta) if !meta.is_file() => Err(StoreError::NotARegularFile(self.clone())),
            Ok(meta) => one_kind(self, path, &meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if access == Access::Create {
                    dangling_of_one_kind(self, path)
                } else {
                    Err(StoreError::NotFound(self.clone()))
                }
            }
            Err(source) => Err(StoreError::Io {
                ledger: self.clone(),
                source,
            }),
        }
    }

    fn open_store(&self, access: Access) -> Result<Arc<dyn Store>, StoreError> {
        Ok(opened(self, Opening::With(access), Queue::NotNeeded)?.store)
    }

    fn open(&self, access: Access) -> Result<OpenedLedger, StoreError> {
        opened(self, Opening::With(access), Queue::NotNeeded)
    }

    fn open_queue(&self, access: Access) -> Result<Arc<dyn QueueStore>, StoreError> {
        opened(self, Opening::With(access), Queue::Needed)?
            .queue
            .ok_or_else(|| StoreError::NoReviewQueue(self.clone()))
    }

    fn open_to_look(&self) -> Result<OpenedLedger, StoreError> {
        opened(self, Opening::ToLook, Queue::NotNeeded)
    }

    async fn init(&self) -> Result<Init, StoreError> {
        // The census reads every row: a file that only looks like a ledger (lines but
        // no entry) is refused here, as any command would refuse it. A server says
        // whether its tables are there only when asked.
        let looked = match self.check(Access::ReadOnly) {
            Ok(()) => self.open_store(Access::ReadOnly)?.census().await.map(drop),
            Err(e) => Err(e),
        };
        match looked {
            Ok(()) => Ok(Init::AlreadyThere),
            Err(StoreError::NotFound(_)) => {
                let store = self.open_store(Access::Create)?;
                store.make_empty().await?;
                Ok(Init::Made)
            }
            Err(e) => Err(e),
        }
    }
}

/// Refuses a file whose names say two kinds of ledger (E1): the kind is read from
/// the name, so the name given must say what the file's own name says, and an
/// empty file (an SQLite ledger not yet written, a JSON Lines one with no line yet)
/// must have one name, or a second name of the other kind could take it as that.
fn one_kind(
    location: &LedgerLocation,
    path: &std::path::Path,
    meta: &std::fs::Metadata,
) -> Result<(), StoreError> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(real) = std::fs::canonicalize(path)
        && LedgerLocation::new(&real).kind() != location.kind()
    {
        return Err(StoreError::KindOfName {
            ledger: location.clone(),
            why: format!(
                "is a {} ledger by this name, but it leads to {}, a {} ledger by its own name; give the ledger by a name of its own kind",
                location.kind_name(),
                crate::text::visible_inline(&real.display().to_string()),
                LedgerLocation::new(&real).kind_name()
            ),
        });
    }
    if meta.len() == 0 && meta.nlink() > 1 {
        return Err(StoreError::KindOfName {
            ledger: location.clone(),
            why: format!(
                "is empty and has {} names (hard links), so another name could take it as another kind of ledger; give it one name (find / -samefile lists them)",
                meta.nlink()
            ),
        });
    }
    Ok(())
}

/// A symlink to a file not made yet: creating the ledger would make the file its
/// link names, so that name must say this kind too.
fn dangling_of_one_kind(
    location: &LedgerLocation,
    path: &std::path::Path,
) -> Result<(), StoreError> {
    if std::fs::read_link(path).is_err() {
        return Ok(());
    }
    // The file the whole chain of links leads to is the one a store would make
    // (`ledger -> current -> 2026-12.jsonl`), not the first link's target (E3).
    let target = crate::stores::jsonl::identity::resolve_file(path);
    if LedgerLocation::new(&target).kind() == location.kind() {
        return Ok(());
    }
    Err(StoreError::KindOfName {
        ledger: location.clone(),
        why: format!(
            "is a {} ledger by this name, but its links lead to {}, which would be made as a {} ledger by its own name; give the ledger by a name of its own kind",
            location.kind_name(),
            crate::text::visible_inline(&target.display().to_string()),
            LedgerLocation::new(&target).kind_name()
        ),
    })
}

/// The one place a location becomes a store: every opener above comes here, so a
/// new kind of ledger is one arm of this match.
fn opened(
    location: &LedgerLocation,
    opening: Opening,
    queue: Queue,
) -> Result<OpenedLedger, StoreError> {
    let access = match opening {
        Opening::With(access) => access,
        Opening::ToLook => Access::ReadWrite,
    };
    location.check(access)?;
    match location {
        LedgerLocation::Sqlite(path) => {
            let store = Arc::new(match opening {
                Opening::With(access) => SqliteStore::open(path, access)?,
                Opening::ToLook => SqliteStore::open_to_look(path)?,
            });
            Ok(OpenedLedger {
                store: store.clone(),
                queue: Some(store),
            })
        }
        // Refused before the file is opened, so asking for a queue never creates
        // a JSON Lines file.
        LedgerLocation::Jsonl(_) if queue == Queue::Needed => {
            Err(StoreError::NoReviewQueue(location.clone()))
        }
        LedgerLocation::Jsonl(path) => Ok(OpenedLedger {
            store: Arc::new(JsonlStore::open(path, access)?),
            queue: None,
        }),
        #[cfg(feature = "postgres")]
        LedgerLocation::Postgres(url) => {
            let store = Arc::new(crate::stores::postgres::PostgresStore::open(url, access)?);
            Ok(OpenedLedger {
                store: store.clone(),
                queue: Some(store),
            })
        }
        #[cfg(not(feature = "postgres"))]
        LedgerLocation::Postgres(_) => Err(StoreError::PostgresNotSupported(location.clone())),
    }
}

/// What [`Open::init`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Nothing was there: an empty ledger is now.
    Made,
    /// A ledger was already there; nothing was changed.
    AlreadyThere,
}

/// A ledger opened: the store every command reads and writes, and the review queue's
/// store where the ledger keeps one.
pub struct OpenedLedger {
    /// The entries and the decision log.
    pub store: Arc<dyn Store>,
    /// The drafts and their decisions; `None` for a ledger without a review queue
    /// (JSON Lines).
    pub queue: Option<Arc<dyn QueueStore>>,
}

#[derive(Clone, Copy)]
enum Opening {
    With(Access),
    ToLook,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Queue {
    Needed,
    NotNeeded,
}

impl crate::ledger::Ledger {
    /// Opens the ledger at `location`, creating it when it is missing: a
    /// `postgres://` or `postgresql://` URL is Postgres, a path ending in `.jsonl` the
    /// Node library's file format, anything else an SQLite file. The clock is the
    /// system's.
    pub fn open(
        location: impl AsRef<std::ffi::OsStr>,
    ) -> Result<crate::ledger::Ledger, StoreError> {
        let store = LedgerLocation::new(location).open_store(Access::Create)?;
        Ok(crate::ledger::Ledger::new(store))
    }
}
