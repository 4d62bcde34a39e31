//! The review queue's library API on a real SQLite file: every case of the shared
//! queue suite (`mod.rs` beside this file), each on a ledger of its own in a
//! temporary directory, every handle its own `SqliteStore` (its own writer and reader
//! connections, as a separate process would have).

use std::sync::Arc;

use send_once::ledger::Access;
use send_once::review::QueueStore;
use send_once::stores::sqlite::SqliteStore;

async fn fresh() -> Option<super::Fixture> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("l.db");
    Some(super::Fixture {
        open: Box::new(move || -> Arc<dyn QueueStore> {
            Arc::new(SqliteStore::open(&path, Access::Create).expect("ledger opens"))
        }),
        _keep: Box::new(dir),
    })
}

super::queue_suite!(fresh);
