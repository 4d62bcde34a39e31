//! The one harness of every test binary: the binary and its output, waits with a
//! deadline, fixtures, the skip rule (`skip`), the tmux terminal (`tmux`), the private
//! PostgreSQL cluster (`pg`, `pg_cli`), network namespaces (`netns`), the real MCP
//! clients and servers (`interop`).
//! Each binary's `main.rs` includes it with
//! `#[path = "../harness/mod.rs"] #[macro_use] mod harness;` before its own modules.
#![allow(dead_code)]

pub mod clock;
pub mod interop;
pub mod mcp;
pub mod netns;
pub mod pg;
pub mod pg_cli;
pub mod queue;
pub mod rng;
pub mod skip;
#[macro_use]
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_send-once"))
}

/// `send-once run LEDGER --key KEY` through `command` (the binary, set up as the test
/// starts it), whose send command is still running when this returns: it runs until
/// the file given back is written, waiting for that file, not for a time. Its files go
/// in `dir`.
pub fn running_send(
    mut command: Command,
    ledger: &str,
    key: &str,
    dir: &Path,
) -> (std::process::Child, PathBuf) {
    let started = dir.join(format!("started-{key}"));
    let go = dir.join(format!("go-{key}"));
    let script = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done",
        started.display(),
        go.display()
    );
    let running = command
        .args(["run", ledger, "--key", key, "--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run starts");
    wait_for_file(&started, patience(20));
    (running, go)
}

/// `send-once ARGS` run to its end, with `ledger` in place of each `L`: a command
/// as a person on shift types it against the test's ledger.
pub fn on_ledger(ledger: &Path, args: &[&str]) -> Output {
    let ledger = ledger.to_str().expect("a UTF-8 path");
    let all: Vec<&str> = args
        .iter()
        .map(|a| if *a == "L" { ledger } else { a })
        .collect();
    send_once(&all).output().expect("send-once runs")
}

pub fn send_once(args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    cmd
}

/// The binary run in `dir`, with no ledger from the environment: a relative ledger
/// path names a file in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    send_once(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs")
}

/// A key every command below takes (64 hex digits, as `--key` wants).
pub const A_KEY: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Every command that takes a ledger, with `l` as its ledger, each as a test that
/// every command refuses something or says the same of it runs it.
pub fn every_command_with_a_ledger(l: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["audit", l],
        vec!["ls", l],
        vec!["show", l, "abc"],
        vec!["decisions", l],
        vec!["resolve", l, "abc", "sent", "--by", "x"],
        vec!["reset", l, "abc", "--by", "x"],
        vec!["gc", l, "--older-than", "1d"],
        vec!["run", l, "--key", A_KEY, "--", "true"],
        vec!["draft", "submit", l, "--key", A_KEY, "--payload", "p.json"],
        vec!["draft", "facts", l, "1", "--facts", "p.json"],
        vec!["draft", "recheck", l, "1"],
        vec!["draft", "withdraw", l, "1"],
        vec!["draft", "show", l, "1"],
        vec!["approvals", l],
        vec!["approve", l, "1", "--out", "approval.json"],
        vec!["reject", l, "1", "--reason", "no"],
        vec!["approval", l, "1"],
        vec!["dispatch", l, "1", "--", "true"],
        vec!["tui", l],
    ]
}

pub fn output(args: &[&str]) -> Output {
    send_once(args).output().expect("send-once runs")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `seconds` on a quiet machine; three times as long under CI, whose runners are
/// slower and more crowded than a workstation. For waits on something that takes a
/// known time here; a wait given a limit of its own keeps it.
pub fn patience(seconds: u64) -> Duration {
    let factor = if skip::in_ci() { 3 } else { 1 };
    Duration::from_secs(seconds * factor)
}

/// Polls `ready` every 10 ms until it holds, failing after `limit` with `what`: every
/// wait in the tests is for something that happens, never for a fixed time.
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    wait_for_value(what, limit, || ready().then_some(()))
}

/// Polls `ready` every 10 ms until it gives a value, failing after `limit` with `what`.
pub fn wait_for_value<T>(what: &str, limit: Duration, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(
            start.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `path` exists (a send command's marker), failing after `limit`.
pub fn wait_for_file(path: &Path, limit: Duration) {
    wait_until(&format!("{} to appear", path.display()), limit, || {
        path.exists()
    });
}

/// Waits for `child` to exit, for up to `limit`; past it, kills it and fails with
/// `what` (what should have happened by then), so a test never hangs on a command.
pub fn wait_child(
    child: &mut std::process::Child,
    what: &str,
    limit: Duration,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not happen within {limit:?}: the command was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The state letter of process `pid` in /proc (R, S, Z...), or None once it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ...: comm may hold spaces and parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Whether process `pid` has ended: gone, or a zombie whoever reaps it has not yet.
pub fn process_ended(pid: u32) -> bool {
    process_state(pid).is_none_or(|state| state == 'Z' || state == 'X')
}

/// Whether process `pid` ends within `limit`.
pub fn ended_within(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while !process_ended(pid) {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits until process `pid` has ended, failing after `limit` with `what`.
pub fn wait_ended(what: &str, pid: u32, limit: Duration) {
    wait_until(what, limit, || process_ended(pid));
}

/// Moves an SQLite ledger's WAL into the file and empties it (`wal_checkpoint(TRUNCATE)`),
/// so comparing the directory's bytes before and after a command compares what the
/// command wrote, not where SQLite last put it.
pub fn checkpoint(ledger: impl AsRef<Path>) {
    let conn = rusqlite::Connection::open(ledger.as_ref()).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

/// The status column of the ledger's row for `key`, read with plain SQL.
pub fn status_of(ledger: &Path, key: &str) -> Option<String> {
    let conn = rusqlite::Connection::open(ledger).expect("open ledger");
    conn.query_row("SELECT status FROM send_once WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .ok()
}

/// The entry JSON of the ledger's row for `key`.
pub fn entry_of(ledger: &Path, key: &str) -> Option<serde_json::Value> {
    let conn = rusqlite::Connection::open(ledger).expect("open ledger");
    let text: Option<String> = conn
        .query_row("SELECT entry FROM send_once WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .ok();
    text.map(|t| serde_json::from_str(&t).expect("entry is JSON"))
}

/// A send command that appends its key to `file`: one line per real send.
pub fn append_key_command(file: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}'", file.display()),
    ]
}

/// Runs `cmd` with `input` on its stdin and collects its output.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send-once runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    child.wait_with_output().expect("send-once finishes")
}

/// Every file and directory under `dir`, with each file's bytes, so a refused command
/// can be shown to have written, created and removed nothing.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            files.insert(format!("{name}/"), Vec::new());
            for (inner, bytes) in snapshot(&path) {
                files.insert(format!("{name}/{inner}"), bytes);
            }
        } else {
            files.insert(name, std::fs::read(&path).unwrap());
        }
    }
    files
}

/// Runs the CLI (colour off, the real clock, no ledger or user from the environment)
/// and insists on its exit code, showing the command and both streams when it differs.
pub fn cli_expecting<S: AsRef<std::ffi::OsStr>>(args: &[S], want: i32) -> Output {
    let out = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER")
        .output()
        .expect("send-once runs");
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        code(&out),
        want,
        "send-once {shown:?}: stdout {:?} stderr {:?}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// Insists on an exit code, showing both streams when it differs.
pub fn expect_exit(o: &Output, want: i32, what: &str) {
    assert_eq!(
        code(o),
        want,
        "{what}: stdout {:?} stderr {:?}",
        stdout(o),
        stderr(o)
    );
}

/// The command's stdout as JSON.
pub fn json_stdout(o: &Output, what: &str) -> serde_json::Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {:?}", stdout(o)))
}

/// Every entry of `ledger`, as `send-once ls --json` lists them.
pub fn entries(ledger: &Path) -> Vec<serde_json::Value> {
    match json_stdout(&on_ledger(ledger, &["ls", "L", "--json"]), "ls") {
        serde_json::Value::Array(entries) => entries,
        other => panic!("ls --json is not a list: {other}"),
    }
}

/// A person (dana) settles `key` as failed although its claim counts as running: the
/// way a call the ledger could not record is let go.
pub fn settle_as_failed(ledger: &Path, key: &str) {
    expect_exit(
        &on_ledger(
            ledger,
            &[
                "resolve",
                "L",
                key,
                "failed",
                "--even-if-running",
                "--by",
                "dana",
            ],
        ),
        0,
        "resolve failed --even-if-running",
    );
}

/// A queued draft at revision 1 with nothing decided, checked or loaded yet: the
/// UI tests fill in what each case needs.
pub fn queued_draft(id: i64, key: &str, created_at: String) -> send_once::review::Draft {
    send_once::review::Draft {
        id,
        key: key.into(),
        state: send_once::review::DraftState::Queued,
        revision: 1,
        version: 1,
        updated_at: created_at.clone(),
        created_at,
        submitted_by: None,
        recheck: None,
        meta: None,
        approval: None,
        approved_revision: None,
        decided_by: None,
        decided_at: None,
        reason: None,
        latest: send_once::review::drift::LatestFacts::default(),
        outcome: None,
        revisions: Vec::new(),
        ledger_sent: None,
        quorum: send_once::review::Quorum::default(),
    }
}

/// A small tmpfs for one test (a full disk, a read-only filesystem), unmounted lazily
/// on drop, which a failed assertion reaches too, so a straggling process cannot keep
/// it. None where mounting is not allowed (not root): skipped by the harness's rule.
pub struct Tmpfs {
    _dir: tempfile::TempDir,
    pub point: PathBuf,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let point = dir.path().join("mnt");
        std::fs::create_dir(&point).ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&point)
            .output()
            .is_ok_and(|o| o.status.success());
        if !mounted {
            skip::missing("cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)");
            return None;
        }
        Some(Tmpfs { _dir: dir, point })
    }

    pub fn remount_read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.point)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.point).status();
    }
}

/// Fills the filesystem holding `dir` (a [`Tmpfs`]) with 4 KiB files (a tmpfs counts whole pages)
/// until one cannot be written, so no page is free; returns them.
pub fn fill_disk(dir: &Path) -> Vec<PathBuf> {
    let page = vec![0u8; 4096];
    let mut pads = Vec::new();
    for i in 0.. {
        let pad = dir.join(format!("pad-{i}"));
        if std::fs::write(&pad, &page).is_err() {
            let _ = std::fs::remove_file(&pad);
            break;
        }
        pads.push(pad);
    }
    assert_eq!(free_bytes(dir), 0, "the disk is full");
    pads
}

/// Removes what [`fill_disk`] wrote.
pub fn free_disk(pads: &mut Vec<PathBuf>) {
    for pad in pads.drain(..) {
        std::fs::remove_file(pad).unwrap();
    }
}

/// The bytes free on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> u64 {
    let c_path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statvfs writes only into the struct given; the path is NUL-terminated.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c_path.as_ptr(), &mut stat), 0);
        stat.f_bfree as u64 * stat.f_frsize as u64
    }
}

/// The name libtest gives the test `function` of the module at `module_path` (pass
/// `module_path!()`), for a test that runs another test of its own binary with
/// `--exact`: the module's path without the binary's name, then the function.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_owned(),
    }
}

/// What the TUI's `v` records when the provider has `key`'s attempt as it is now: a
/// verify by `by` that found it under `provider_id`, through the library, as a screen
/// would (so a CLI test needs no terminal to have one).
pub fn record_found(ledger: &str, key: &str, by: &str, provider_id: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        use send_once::open::Open;
        let store = send_once::ledger::LedgerLocation::new(ledger)
            .open_store(send_once::ledger::Access::ReadWrite)
            .expect("the ledger opens");
        let ledger = send_once::ledger::Ledger::new(store);
        let entry = ledger.get(key).await.unwrap().expect("an entry to verify");
        ledger
            .record_verify(&entry, by, &found(provider_id), Some("verify.sh"))
            .await
            .expect("the verify is recorded");
    });
}

/// A verify's "happened" answer under `provider_id`.
pub fn found(provider_id: &str) -> send_once::provider::CheckAnswer {
    send_once::provider::CheckAnswer::Happened {
        provider_id: Some(provider_id.to_owned()),
        id_problem: None,
        evidence: serde_json::json!({ "id": provider_id })
            .as_object()
            .expect("an object")
            .clone(),
    }
}
