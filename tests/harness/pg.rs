//! A private PostgreSQL cluster for the tests that need a real server: `initdb` in a
//! temporary directory, the server on a free port of 127.0.0.1 with a socket directory of
//! its own, a database and a password user for the test, and everything stopped and
//! removed when the cluster is dropped (a failed assertion unwinds through that too).
//!
//! `initdb` refuses to run as root, so as root every PostgreSQL program runs through
//! `runuser -u postgres --` (or `nobody` where there is no `postgres` user) and the files
//! belong to that user. Without PostgreSQL binaries a test is skipped by the harness's
//! rule (`skip.rs`: one printed line, a failure under `CI=true`).
//!
//! `let Some(pg) = pg::PgCluster::start() else { return };` for a cluster of the test's
//! own (needed to stop and start the server), or `pg::PgCluster::shared()` for the one
//! cluster of the test binary.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The programs the harness runs; a directory is used only when it has all of them, so
/// they come from one installation.
const PROGRAMS: [&str; 5] = ["initdb", "pg_ctl", "postgres", "pg_isready", "psql"];

/// The superuser initdb makes; it logs in only through the private socket.
pub const SUPERUSER: &str = "postgres";
/// The role and database the tests use, over TCP with a password.
pub const USER: &str = "sendonce";
pub const DATABASE: &str = "sendonce";

/// Starting takes about a second here; a machine busy with builds can be far slower,
/// and a server that has not come up by then is not going to.
const READY_LIMIT: Duration = Duration::from_secs(90);

/// Where the PostgreSQL programs are: the first `initdb` on PATH whose directory (after
/// symlinks, as /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb) has the
/// rest, then /usr/lib/postgresql/*/bin, newest version first.
pub fn find_binaries() -> Result<PathBuf, String> {
    let complete = |dir: &Path| PROGRAMS.iter().all(|p| is_executable(&dir.join(p)));
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            if !is_executable(&initdb) {
                continue;
            }
            for candidate in [std::fs::canonicalize(&initdb).ok(), Some(initdb)]
                .into_iter()
                .flatten()
            {
                if let Some(parent) = candidate.parent()
                    && complete(parent)
                {
                    return Ok(parent.to_path_buf());
                }
            }
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((version?, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions
        .into_iter()
        .map(|(_, dir)| dir)
        .find(|dir| complete(dir))
        .ok_or_else(|| {
            "no initdb, pg_ctl, postgres, pg_isready and psql together on PATH or in \
             /usr/lib/postgresql/*/bin"
                .to_string()
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The programs and, as root, the account to run them as; Err says why there are none.
fn locate() -> Result<(PathBuf, Option<Owner>), String> {
    Ok((find_binaries()?, choose_owner()?))
}

/// Every test that cannot have a cluster says so in one line, except under CI, which
/// must run them all.
fn skip_or_fail<T>(why: &str) -> Option<T> {
    super::skip::missing(&format!(
        "no PostgreSQL here ({why}; Debian package postgresql)"
    ));
    None
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The unprivileged account that owns the cluster when the tests run as root.
#[derive(Debug, Clone)]
pub struct Owner {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

fn account(name: &str) -> Option<Owner> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some(Owner {
        name: name.to_string(),
        uid: id("-u")?,
        gid: id("-g")?,
    })
}

/// Why the cluster cannot be made here, or who owns it: None when the tests are not root.
fn choose_owner() -> Result<Option<Owner>, String> {
    if !is_root() {
        return Ok(None);
    }
    if !Command::new("runuser")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return Err("running as root, and runuser is missing to run initdb as another user".into());
    }
    ["postgres", "nobody"]
        .iter()
        .find_map(|name| account(name))
        .map(Some)
        .ok_or_else(|| "running as root, with no postgres or nobody user to run initdb as".into())
}

/// A password no test could guess or have typed: 128 random bits in hex, so it needs no
/// escaping in a URL and a search for it in output cannot match by accident.
fn new_password() -> String {
    let word = || RandomState::new().build_hasher().finish();
    format!("pw{:016x}{:016x}", word(), word())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("pg harness: no free port on 127.0.0.1: {e}"))
}

/// What a cluster listens on and lets in beside 127.0.0.1; the default is what
/// [`PgCluster::start`] gives. The tests that put senders in network namespaces need
/// the host ends of their links.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// More addresses to listen on (each must be on an interface when the server starts).
    pub listen_addresses: Vec<String>,
    /// Networks (CIDR) whose clients may log in over TCP with a password.
    pub hba_networks: Vec<String>,
}

pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    owner: Option<Owner>,
    options: Options,
    port: Mutex<u16>,
    password: String,
    messages: Mutex<Vec<String>>,
    started_in: Duration,
    removed: AtomicBool,
    watchdog: Mutex<Option<std::process::Child>>,
}

impl std::fmt::Debug for PgCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCluster")
            .field("url", &self.redacted_url())
            .field("dir", &self.dir.path())
            .field("owner", &self.owner)
            .finish()
    }
}

static SHARED: OnceLock<Result<PgCluster, String>> = OnceLock::new();

extern "C" fn stop_shared_cluster() {
    if let Some(Ok(cluster)) = SHARED.get() {
        cluster.shut_down();
    }
}

impl PgCluster {
    /// A cluster of the caller's own, or None (after one printed line) where there is no
    /// PostgreSQL; with CI=true that is a failure instead.
    pub fn start() -> Option<PgCluster> {
        Self::start_with_options(Options::default())
    }

    /// [`PgCluster::start`], listening and letting in what `options` add.
    pub fn start_with_options(options: Options) -> Option<PgCluster> {
        match locate() {
            Ok((bin, owner)) => Some(Self::start_with(bin, owner, options)),
            Err(why) => skip_or_fail(&why),
        }
    }

    /// The test binary's one cluster, started by the first test that asks and stopped
    /// when the binary exits (statics are never dropped, so an exit hook does it). Tests
    /// that stop the server must use a cluster of their own.
    pub fn shared() -> Option<&'static PgCluster> {
        let shared = SHARED.get_or_init(|| {
            let (bin, owner) = locate()?;
            let cluster = Self::start_with(bin, owner, Options::default());
            // SAFETY: the hook takes no arguments and does not unwind: shut_down
            // reports its failures instead of panicking.
            if unsafe { libc::atexit(stop_shared_cluster) } != 0 {
                cluster.say("could not register the exit hook; the cluster may outlive the tests");
            }
            Ok(cluster)
        });
        match shared {
            Ok(cluster) => Some(cluster),
            Err(why) => skip_or_fail(why),
        }
    }

    fn start_with(bin: PathBuf, owner: Option<Owner>, options: Options) -> PgCluster {
        let began = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("send-once-pg.")
            .tempdir()
            .unwrap_or_else(|e| panic!("pg harness: cannot make a temporary directory: {e}"));
        let mut cluster = PgCluster {
            dir,
            bin,
            owner,
            options,
            port: Mutex::new(0),
            password: new_password(),
            messages: Mutex::new(Vec::new()),
            started_in: Duration::ZERO,
            removed: AtomicBool::new(false),
            watchdog: Mutex::new(None),
        };
        std::fs::create_dir(cluster.socket_dir())
            .unwrap_or_else(|e| cluster.fail(&format!("cannot make the socket directory: {e}")));
        if let Some(owner) = &cluster.owner {
            for path in [cluster.dir.path().to_path_buf(), cluster.socket_dir()] {
                std::os::unix::fs::chown(&path, Some(owner.uid), Some(owner.gid)).unwrap_or_else(
                    |e| {
                        cluster.fail(&format!(
                            "cannot give {} to {}: {e}",
                            path.display(),
                            owner.name
                        ))
                    },
                );
            }
        }
        cluster.initdb();
        cluster.let_in_networks();
        cluster.watch_over();
        cluster.start_on_a_free_port();
        cluster.make_user_and_database();
        cluster.started_in = began.elapsed();
        let who = match &cluster.owner {
            Some(o) => format!("files and server owned by {} (uid {})", o.name, o.uid),
            None => "files and server owned by the current user".to_string(),
        };
        cluster.say(&format!(
            "PostgreSQL from {} at {} ({who}), ready in {:.2?}",
            cluster.bin.display(),
            cluster.redacted_url(),
            cluster.started_in
        ));
        cluster
    }

    /// A PostgreSQL program, run as the cluster's owner when the tests are root, in the
    /// cluster's directory (the caller's may be closed to that user), with no PG*
    /// variables of the caller's to point it elsewhere.
    fn program(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        let mut cmd = match &self.owner {
            Some(owner) => {
                let mut c = Command::new("runuser");
                c.args(["-u", &owner.name, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        for var in [
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
            "PGDATA",
            "PGSSLMODE",
        ] {
            cmd.env_remove(var);
        }
        cmd.current_dir(self.dir.path()).stdin(Stdio::null());
        cmd
    }

    fn run(&self, what: &str, cmd: &mut Command) -> Output {
        let out = cmd
            .output()
            .unwrap_or_else(|e| self.fail(&format!("{what}: cannot run it: {e}")));
        if !out.status.success() {
            self.fail(&format!(
                "{what} failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        out
    }

    fn initdb(&self) {
        let mut cmd = self.program("initdb");
        cmd.arg("-D")
            .arg(self.data_dir())
            .args(["-U", SUPERUSER, "-E", "UTF8", "--locale=C"])
            // The superuser logs in only through the private socket (a directory only
            // its owner and root can enter); over TCP every role needs its password.
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            // Skips only initdb's own final flush of the new files (3.6 s of the 4 s it
            // takes here); the server itself runs with fsync on, and a test's writes
            // are durable as in production unless the machine itself goes down.
            .arg("--no-sync");
        self.run("initdb", &mut cmd);
    }

    /// The options' networks, after initdb's own lines, with the same password rule.
    fn let_in_networks(&self) {
        use std::io::Write;
        if self.options.hba_networks.is_empty() {
            return;
        }
        let lines: String = self
            .options
            .hba_networks
            .iter()
            .map(|net| format!("host all all {net} scram-sha-256\n"))
            .collect();
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.data_dir().join("pg_hba.conf"))
            .and_then(|mut f| {
                f.write_all(format!("\n# send-once test harness\n{lines}").as_bytes())
            })
            .unwrap_or_else(|e| self.fail(&format!("cannot write pg_hba.conf: {e}")));
    }

    /// pg_ctl puts the server in a session of its own, so when the test process dies
    /// without unwinding (Ctrl-C, kill -9, an abort) nothing would stop it. A small
    /// shell in a process group of its own (out of the terminal's Ctrl-C) holds the
    /// read end of a pipe whose write end only this process has; the end of this
    /// process closes it, and the shell then stops the server and removes the files.
    fn watch_over(&self) {
        let mut stop = self.program("pg_ctl");
        stop.arg("stop")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w", "-t", "30"]);
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"dir="$1"; shift; cat >/dev/null; [ -d "$dir" ] || exit 0; "$@" >/dev/null 2>&1; rm -rf "$dir""#)
            .arg("pg-harness-watchdog")
            .arg(self.dir.path())
            .arg(stop.get_program())
            .args(stop.get_args())
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        match cmd.spawn() {
            Ok(child) => *self.watchdog.lock().unwrap_or_else(|e| e.into_inner()) = Some(child),
            Err(e) => self.say(&format!(
                "no watchdog ({e}): a test process killed outright leaves its server running"
            )),
        }
    }

    /// Settings go in postgresql.conf rather than on pg_ctl's command line, so a restart
    /// mid-test comes back the same; a later line wins, so a retry just appends a port.
    fn configure(&self, port: u16) {
        use std::io::Write;
        let sock = self.socket_dir();
        let listen = std::iter::once("127.0.0.1")
            .chain(self.options.listen_addresses.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(",");
        let text = format!(
            "\n# send-once test harness\nlisten_addresses = '{listen}'\nport = {port}\n\
             unix_socket_directories = '{}'\nfsync = on\nsynchronous_commit = on\n",
            sock.display()
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.data_dir().join("postgresql.conf"))
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .unwrap_or_else(|e| self.fail(&format!("cannot write postgresql.conf: {e}")));
    }

    /// Another process may take the port between asking for it and the server binding
    /// it; the server then stops at once saying so, and another port is tried.
    fn start_on_a_free_port(&self) {
        for attempt in 1..=5 {
            let port = free_port();
            self.configure(port);
            *self.port.lock().unwrap_or_else(|e| e.into_inner()) = port;
            match self.try_start() {
                Ok(()) => return,
                Err(log) if attempt < 5 && log.contains("already in use") => {
                    self.say(&format!("port {port} was taken; trying another"));
                }
                Err(log) => self.fail(&format!("the server did not start: {log}")),
            }
        }
    }

    fn try_start(&self) -> Result<(), String> {
        let out = self
            .program("pg_ctl")
            .arg("start")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", &READY_LIMIT.as_secs().to_string()])
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{}{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                self.log_tail()
            ));
        }
        self.wait_until_accepting();
        Ok(())
    }

    /// pg_ctl -w has seen the server come up on its socket; the tests connect over TCP,
    /// so that is what is polled.
    fn wait_until_accepting(&self) {
        let began = Instant::now();
        loop {
            let ready = self
                .program("pg_isready")
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port().to_string(),
                    "-t",
                    "5",
                ])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            if began.elapsed() > READY_LIMIT {
                self.fail(&format!(
                    "the server did not accept connections on 127.0.0.1:{} within {READY_LIMIT:?}{}",
                    self.port(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn make_user_and_database(&self) {
        // Through psql's stdin, so the password is on no command line; one statement at
        // a time, as CREATE DATABASE cannot run in a transaction.
        self.sql_in(
            "postgres",
            &format!(
                "CREATE ROLE {USER} LOGIN PASSWORD '{}';\nCREATE DATABASE {DATABASE} OWNER {USER};\n",
                self.password
            ),
        );
    }

    /// Runs `sql` as the superuser in the test database and returns psql's unaligned
    /// output (one row a line, columns split by `|`), trimmed.
    pub fn sql(&self, sql: &str) -> String {
        self.sql_in(DATABASE, sql)
    }

    pub fn sql_in(&self, database: &str, sql: &str) -> String {
        use std::io::Write;
        let mut cmd = self.program("psql");
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(self.socket_dir())
            .args([
                "-p",
                &self.port().to_string(),
                "-U",
                SUPERUSER,
                "-d",
                database,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| self.fail(&format!("cannot run psql: {e}")));
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(sql.as_bytes())
                .unwrap_or_else(|e| self.fail(&format!("cannot write to psql: {e}")));
        }
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| self.fail(&format!("psql did not finish: {e}")));
        if !out.status.success() {
            self.fail(&format!(
                "SQL failed ({}): {sql}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are ended, the data is kept).
    pub fn stop(&self) {
        let mut cmd = self.program("pg_ctl");
        cmd.arg("stop").arg("-D").arg(self.data_dir()).args([
            "-m",
            "fast",
            "-w",
            "-t",
            &READY_LIMIT.as_secs().to_string(),
        ]);
        self.run("pg_ctl stop", &mut cmd);
    }

    /// Starts a stopped server again on the same port, and waits until it accepts
    /// connections.
    pub fn start_again(&self) {
        if let Err(log) = self.try_start() {
            self.fail(&format!("the server did not start again: {log}"));
        }
    }

    pub fn is_running(&self) -> bool {
        self.program("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(self.data_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// `postgres://sendonce:PASSWORD@127.0.0.1:PORT/sendonce`, for the code under test.
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{}@127.0.0.1:{}/{DATABASE}",
            self.password,
            self.port()
        )
    }

    /// [`PgCluster::url`] with another host, one of the options' listen addresses.
    pub fn url_on(&self, host: &str) -> String {
        format!(
            "postgres://{USER}:{}@{host}:{}/{DATABASE}",
            self.password,
            self.port()
        )
    }

    /// The URL as it may be shown: the password as `***`.
    pub fn redacted_url(&self) -> String {
        format!("postgres://{USER}:***@127.0.0.1:{}/{DATABASE}", self.port())
    }

    /// The test user's password, for tests that check it appears in no output.
    pub fn password(&self) -> &str {
        &self.password
    }

    pub fn port(&self) -> u16 {
        *self.port.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    pub fn owner(&self) -> Option<&Owner> {
        self.owner.as_ref()
    }

    /// How long initdb, the start and making the user and database took.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The postmaster's process id, from the first line of postmaster.pid.
    pub fn server_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.data_dir().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }

    /// Every line the harness has printed or panicked with, already redacted.
    pub fn messages(&self) -> Vec<String> {
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `text` with the password shown as `***`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.password, "***")
    }

    fn say(&self, message: &str) {
        let message = self.redact(message);
        eprintln!("pg harness: {message}");
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message);
    }

    /// Every harness failure goes through here, so what it reports (SQL, psql's echo of
    /// it, the server log) never carries the password.
    fn fail(&self, message: &str) -> ! {
        let message = format!("pg harness: {}", self.redact(message));
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message.clone());
        panic!("{message}")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        format!(
            "\n--- server log ({}) ---\n{tail}",
            self.log_path().display()
        )
    }

    /// Stops the server and removes its files; safe to call twice. Failures are printed,
    /// not raised: this runs in Drop, possibly while a failed test unwinds.
    fn shut_down(&self) {
        if self.removed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.server_pid().is_some() {
            let stopped = |mode: &str| {
                self.program("pg_ctl")
                    .arg("stop")
                    .arg("-D")
                    .arg(self.data_dir())
                    .args(["-m", mode, "-w", "-t", "30"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !stopped("fast") && !stopped("immediate") {
                eprintln!(
                    "pg harness: could not stop the server in {}",
                    self.dir.path().display()
                );
            }
        }
        if let Err(e) = std::fs::remove_dir_all(self.dir.path()) {
            eprintln!(
                "pg harness: could not remove {}: {e}",
                self.dir.path().display()
            );
        }
        // Closing its pipe lets the watchdog finish; the files are gone, so it exits.
        let watchdog = self
            .watchdog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut child) = watchdog {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.shut_down();
    }
}
