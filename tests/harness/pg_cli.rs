//! What the tests that drive the binary against a real server share: the binary with
//! none of the caller's PG* variables, a session of the test's own on the server (to
//! hold locks and end other sessions), and a send command the test can hold mid-send.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::pg::PgCluster;

/// Long enough for a machine busy with builds; every wait ends as soon as what it
/// waits for has happened.
pub const LIMIT: Duration = Duration::from_secs(60);

/// The variables libpq (and so send-once) reads, which a test must not inherit.
const PG_VARIABLES: [&str; 13] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGOPTIONS",
    "PGSSLMODE",
    "PGSSLROOTCERT",
    "PGAPPNAME",
];

/// The binary, with no ledger, log or connection settings of the caller's.
pub fn so(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_send-once"));
    cmd.args(args)
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_LOG")
        .stdin(std::process::Stdio::null());
    for var in PG_VARIABLES {
        cmd.env_remove(var);
    }
    cmd
}

pub fn run(args: &[&str]) -> Output {
    so(args).output().expect("send-once runs")
}

/// The cluster's URL for the ledger in table `table`.
pub fn table_url(pg: &PgCluster, table: &str) -> String {
    format!("{}?table={table}", pg.url())
}

/// Both streams, for a failed assertion, with the password hidden.
pub fn said(pg: &PgCluster, o: &Output) -> String {
    pg.redact(&format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    ))
}

pub fn expect_code(pg: &PgCluster, o: &Output, want: i32, what: &str) {
    assert_eq!(o.status.code(), Some(want), "{what}: {}", said(pg, o));
}

/// Waits for `ready` to give a value, failing after [`LIMIT`].
pub fn wait_for<T>(what: &str, ready: impl FnMut() -> Option<T>) -> T {
    super::wait_for_value(what, LIMIT, ready)
}

/// A session of the test's own on the server (as the test user, over TCP), with a
/// runtime that keeps its connection served while the test thread waits on processes.
pub struct Session {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    pid: i32,
}

impl Session {
    pub fn connect(url: &str) -> Session {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the test's session");
        let (client, connection) = runtime
            .block_on(tokio_postgres::connect(url, tokio_postgres::NoTls))
            .expect("the test's session connects");
        runtime.spawn(async move {
            let _ = connection.await;
        });
        let pid = runtime
            .block_on(client.query_one("SELECT pg_backend_pid()", &[]))
            .expect("the session's backend pid")
            .get(0);
        Session {
            runtime,
            client,
            pid,
        }
    }

    /// The session's backend process id on the server.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn batch(&self, sql: &str) {
        self.runtime
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Vec<tokio_postgres::Row> {
        self.runtime
            .block_on(self.client.query(sql, params))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// One text column of every row.
    pub fn texts(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Vec<String> {
        self.query(sql, params)
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect()
    }

    /// Takes `mode` on `table` in a transaction left open until [`Session::release`].
    pub fn lock(&self, table: &str, mode: &str) {
        self.batch(&format!("BEGIN; LOCK TABLE {table} IN {mode} MODE"));
    }

    pub fn release(&self) {
        self.batch("COMMIT");
    }

    /// The send-once backend that waits for a lock `holder` holds, once there is one
    /// other than `not`. Asked from a session outside any transaction: inside one, the
    /// server shows the activity as it was when the transaction first looked.
    pub fn wait_for_blocked(&self, holder: &Session, not: &[i32]) -> i32 {
        wait_for("a send-once statement blocked by the test's lock", || {
            self.query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'send-once' \
                 AND wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))",
                &[&holder.pid],
            )
            .iter()
            .map(|r| r.get::<_, i32>(0))
            .find(|pid| !not.contains(pid))
        })
    }

    /// The idle send-once backend whose last statement was about `table` (its entries,
    /// or its drafts, which `run` reads again once it has claimed).
    pub fn wait_for_idle(&self, table: &str) -> i32 {
        let pattern = format!("% {table}%");
        wait_for("an idle send-once connection", || {
            self.query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'send-once' \
                 AND state = 'idle' AND query LIKE $1",
                &[&pattern],
            )
            .first()
            .map(|r| r.get::<_, i32>(0))
        })
    }

    /// Ends another backend, as `pg_terminate_backend` does, and waits until it is gone.
    pub fn terminate(&self, pid: i32) {
        let ended: bool = self
            .query("SELECT pg_terminate_backend($1)", &[&pid])
            .first()
            .map(|r| r.get(0))
            .unwrap_or(false);
        assert!(ended, "backend {pid} was there to terminate");
        wait_for("the terminated backend to go", || {
            self.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid])
                .is_empty()
                .then_some(())
        });
    }

    /// `status` and `entry` of `key`'s row in `table`.
    pub fn row(&self, table: &str, key: &str) -> Option<(String, serde_json::Value)> {
        self.query(
            &format!("SELECT status, entry FROM {table} WHERE key = $1"),
            &[&key],
        )
        .first()
        .map(|r| {
            let entry: String = r.get(1);
            (
                r.get(0),
                serde_json::from_str(&entry).expect("the entry is JSON"),
            )
        })
    }

    pub fn count(&self, table: &str) -> i64 {
        self.query(&format!("SELECT count(*) FROM {table}"), &[])[0].get(0)
    }
}

/// A send command the test holds in the middle of its send: it appends its key to
/// `sends` (one line per real send), says it started, then waits until the test opens
/// its gate (a FIFO), and prints a provider id.
pub struct HeldSend {
    dir: PathBuf,
}

impl HeldSend {
    pub fn new(dir: &Path) -> HeldSend {
        let held = HeldSend {
            dir: dir.to_path_buf(),
        };
        let gate = held.gate();
        let _ = std::fs::remove_file(&gate);
        let made = Command::new("mkfifo")
            .arg(&gate)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", gate.display());
        held
    }

    fn gate(&self) -> PathBuf {
        self.dir.join("gate")
    }

    pub fn sends(&self) -> PathBuf {
        self.dir.join("sends")
    }

    fn started(&self, key: &str) -> PathBuf {
        self.dir.join(format!("started-{key}"))
    }

    /// The argv after `--`.
    pub fn command(&self) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            format!(
                "printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}' && : > '{}/started-'\"$SEND_ONCE_KEY\" \
                 && read _ < '{}' && echo \"id-$SEND_ONCE_KEY\"",
                self.sends().display(),
                self.dir.display(),
                self.gate().display()
            ),
        ]
    }

    /// Waits until the send for `key` has started.
    pub fn wait_started(&self, key: &str) {
        let marker = self.started(key);
        wait_for(&format!("the send for {key} to start"), || {
            marker.exists().then_some(())
        });
    }

    /// Lets the waiting send finish.
    pub fn open(&self) {
        use std::io::Write;
        // Opening a FIFO for writing waits for its reader, which the started send is
        // about to be (or already is).
        let mut gate = std::fs::OpenOptions::new()
            .write(true)
            .open(self.gate())
            .expect("open the gate");
        gate.write_all(b"go\n").expect("write the gate");
    }

    /// How many times each key's send ran.
    pub fn times_sent(&self, key: &str) -> usize {
        std::fs::read_to_string(self.sends())
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == key)
            .count()
    }
}
