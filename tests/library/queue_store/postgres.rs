//! The review queue's library API on a real Postgres server: every case of the shared
//! queue suite (`mod.rs` beside this file), each on tables of its own (`?table=`)
//! in the test binary's private cluster, every handle its own `PostgresStore` (its own
//! pool of connections, as a separate process would have).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use send_once::ledger::Access;
use send_once::ledger::location::PostgresUrl;
use send_once::review::QueueStore;
use send_once::stores::postgres::PostgresStore;

use crate::harness::pg;

async fn fresh() -> Option<super::Fixture> {
    static CASE: AtomicU32 = AtomicU32::new(0);
    let cluster = pg::PgCluster::shared()?;
    let table = format!(
        "queue_{}_{}",
        std::process::id(),
        CASE.fetch_add(1, Ordering::SeqCst)
    );
    let url = PostgresUrl::new(&format!("{}?table={table}", cluster.url()));
    Some(super::Fixture {
        open: Box::new(move || -> Arc<dyn QueueStore> {
            Arc::new(PostgresStore::open(&url, Access::Create).expect("ledger opens"))
        }),
        _keep: Box::new(()),
    })
}

super::queue_suite!(fresh);
