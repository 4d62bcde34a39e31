//! A full disk: a tmpfs of 512 KiB, mounted by the test and filled with 4 KiB files
//! until a write fails. Every command that writes is refused before anything is sent,
//! saying the disk is full, with exit 2 and the ledger's bytes unchanged; the commands
//! that only look (and the TUI's loads) still work; once space is freed the ledger
//! opens cleanly. On JSON Lines a failed lock write leaves no lock behind, and a
//! failed append leaves no torn fragment. Real sends are counted from a side file off
//! the full disk. One test, so the steps run in order on one mount. Skipped, with a
//! note, where this process may not mount filesystems.

use std::path::PathBuf;
use std::process::{Command, Output};

use send_once::ledger::{Store, StoreError};
use send_once::stores::sqlite::SqliteStore;

use crate::harness;
use crate::harness::tmux::{self, Term};
use crate::harness::*;

struct Ctx {
    dir: PathBuf,
    /// Off the full disk: one line per real send.
    sends: PathBuf,
}

impl Ctx {
    fn run(&self, args: &[&str]) -> Output {
        send_once(args)
            .current_dir(&self.dir)
            .output()
            .expect("send-once runs")
    }

    /// `args` followed by `-- <a send command that counts itself>`.
    fn run_send(&self, args: &[&str]) -> Output {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.push("--".into());
        all.extend(append_key_command(&self.sends));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        self.run(&all)
    }

    fn sent(&self) -> usize {
        std::fs::read_to_string(&self.sends)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn key(&self, to: &str, intent: &str) -> String {
        let out = self.run(&["key", "--channel", "email", "--to", to, "--intent", intent]);
        expect_exit(&out, 0, "key");
        stdout(&out).trim().to_owned()
    }

    fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.dir.join(name)).ok()
    }

    /// What a refused write must leave as it was: the ledger file, and a WAL with no
    /// frames in it (SQLite may leave an empty one, and a -shm, on opening).
    fn sqlite_state(&self, ledger: &str) -> (Vec<u8>, u64) {
        let wal = std::fs::metadata(self.dir.join(format!("{ledger}-wal"))).map_or(0, |m| m.len());
        (self.bytes(ledger).expect("the ledger"), wal)
    }
}

fn expect_full(out: &Output, what: &str) {
    expect_exit(out, 2, what);
    let message = stderr(out);
    assert!(
        message.contains("is full"),
        "{what}: says the disk is full: {message:?}"
    );
    assert!(
        !message.contains("disk I/O error"),
        "{what}: not a bare I/O error: {message:?}"
    );
}

#[test]
fn a_full_disk_is_named_and_costs_nothing() {
    let Some(mount) = Tmpfs::mount("512k") else {
        return;
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let ctx = Ctx {
        dir: mount.point.clone(),
        sends: elsewhere.path().join("sends.txt"),
    };
    std::fs::write(ctx.dir.join("p.json"), r#"{"to":"ana@example.com"}"#).unwrap();
    std::fs::write(ctx.dir.join("f.json"), r#"{"invoice":"open"}"#).unwrap();

    sqlite_on_a_full_disk(&ctx);
    jsonl_on_a_full_disk(&ctx);
    jsonl_append_cut_back(&ctx);
    jsonl_change_without_its_decision_is_taken_back(&ctx);
}

fn sqlite_on_a_full_disk(ctx: &Ctx) {
    // Seed: an unknown send, a sent one, three drafts (the third approved).
    expect_exit(
        &ctx.run(&[
            "run",
            "L.db",
            "--channel",
            "email",
            "--to",
            "p@x.com",
            "--intent",
            "pend",
            "--",
            "sh",
            "-c",
            "exit 7",
        ]),
        3,
        "seed pending",
    );
    expect_exit(
        &ctx.run_send(&[
            "run",
            "L.db",
            "--channel",
            "email",
            "--to",
            "s@x.com",
            "--intent",
            "sent",
        ]),
        0,
        "seed sent",
    );
    for to in ["d1@x.com", "d2@x.com", "d3@x.com"] {
        expect_exit(
            &ctx.run(&[
                "draft",
                "submit",
                "L.db",
                "--channel",
                "email",
                "--to",
                to,
                "--intent",
                "d",
                "--payload",
                "p.json",
            ]),
            0,
            "seed draft",
        );
    }
    expect_exit(
        &ctx.run(&["approve", "L.db", "3", "--by", "ops"]),
        0,
        "seed approval",
    );
    let pending = ctx.key("p@x.com", "pend");
    let seeded_sends = ctx.sent();
    assert_eq!(seeded_sends, 1);

    let mut pads = harness::fill_disk(&ctx.dir);
    let before = ctx.sqlite_state("L.db");

    // Every command that writes: refused, named, nothing sent, nothing changed.
    let writes: Vec<Vec<&str>> = vec![
        vec![
            "run",
            "L.db",
            "--channel",
            "email",
            "--to",
            "new@x.com",
            "--intent",
            "n1",
        ],
        vec!["resolve", "L.db", &pending, "sent", "--by", "ops"],
        vec!["reset", "L.db", &pending, "--by", "ops"],
        vec![
            "draft",
            "submit",
            "L.db",
            "--channel",
            "email",
            "--to",
            "d4@x.com",
            "--intent",
            "d",
            "--payload",
            "p.json",
        ],
        vec!["draft", "facts", "L.db", "1", "--facts", "f.json"],
        vec!["draft", "withdraw", "L.db", "2", "--by", "ops"],
        vec!["approve", "L.db", "1", "--by", "ops"],
        vec!["reject", "L.db", "2", "--reason", "no", "--by", "ops"],
        vec!["dispatch", "L.db", "3"],
        vec!["gc", "L.db", "--older-than", "1ms"],
    ];
    for args in &writes {
        let out = if matches!(args[0], "run" | "dispatch") {
            ctx.run_send(args)
        } else {
            ctx.run(args)
        };
        expect_full(&out, &args.join(" "));
        assert_eq!(ctx.sent(), seeded_sends, "{args:?}: nothing was sent");
        assert!(
            ctx.sqlite_state("L.db") == before,
            "{args:?}: the ledger is unchanged"
        );
    }

    // Every command that only looks answers as on a roomy disk.
    let audit = ctx.run(&["audit", "L.db"]);
    expect_exit(&audit, 1, "audit");
    assert!(stdout(&audit).contains(&pending), "{}", stdout(&audit));
    let listed = json_stdout(&ctx.run(&["ls", "L.db", "--json"]), "ls");
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
    let shown = ctx.run(&["show", "L.db", &pending, "--json"]);
    expect_exit(&shown, 0, "show");
    assert_eq!(json_stdout(&shown, "show")["entry"]["status"], "pending");
    expect_exit(&ctx.run(&["decisions", "L.db", "--json"]), 0, "decisions");
    let queue = ctx.run(&["approvals", "L.db", "--json"]);
    expect_exit(&queue, 0, "approvals");
    assert_eq!(
        json_stdout(&queue, "approvals").as_array().map(Vec::len),
        Some(3)
    );
    expect_exit(&ctx.run(&["draft", "show", "L.db", "1"]), 0, "draft show");
    expect_exit(&ctx.run(&["approval", "L.db", "3"]), 0, "approval");

    // The TUI opens the ledger to look; a decision says the disk is full.
    tui_loads(ctx);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = SqliteStore::open_to_look(&ctx.dir.join("L.db")).expect("opened to look");
    let census = runtime.block_on(store.census()).expect("census");
    assert_eq!((census.pending, census.sent), (1, 1));
    let claim = send_once::ledger::Entry::claim(
        &ctx.key("t@x.com", "tui"),
        "2026-12-01T00:00:00.000Z",
        None,
    );
    let refused = runtime.block_on(store.claim(&claim));
    assert!(
        matches!(refused, Err(StoreError::DiskFull(_))),
        "{refused:?}"
    );
    drop(store);
    assert!(
        ctx.sqlite_state("L.db") == before,
        "looking changed nothing"
    );

    // Space freed: the ledger opens cleanly and takes writes again.
    harness::free_disk(&mut pads);
    let conn = rusqlite::Connection::open(ctx.dir.join("L.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    expect_exit(&ctx.run_send(&writes[0]), 0, "run after space is freed");
    assert_eq!(ctx.sent(), seeded_sends + 1);
    expect_exit(
        &ctx.run(&["resolve", "L.db", &pending, "sent", "--by", "ops"]),
        0,
        "resolve after space is freed",
    );
    expect_exit(
        &ctx.run(&["audit", "L.db"]),
        0,
        "audit after space is freed",
    );
    // Room for what comes next.
    for name in ["L.db", "L.db-wal", "L.db-shm"] {
        let _ = std::fs::remove_file(ctx.dir.join(name));
    }
}

/// `send-once tui` on the full disk shows the ledger: its header counts it.
fn tui_loads(ctx: &Ctx) {
    if !tmux::usable() {
        return;
    }
    let bin = bin();
    let term = Term::start(
        &ctx.dir,
        "disk-full",
        (100, 30),
        &[],
        &[
            "env",
            "NO_COLOR=1",
            bin.to_str().unwrap(),
            "tui",
            "L.db",
            "--by",
            "ops",
        ],
    );
    term.wait_until("the TUI to show the ledger on a full disk", |screen| {
        screen.contains("1 pending") && screen.contains("1 sent")
    });
}

fn jsonl_on_a_full_disk(ctx: &Ctx) {
    expect_exit(
        &ctx.run(&[
            "run",
            "J.jsonl",
            "--channel",
            "email",
            "--to",
            "p@x.com",
            "--intent",
            "pend",
            "--",
            "sh",
            "-c",
            "exit 7",
        ]),
        3,
        "seed pending",
    );
    let pending = ctx.key("p@x.com", "pend");
    let seeded_sends = ctx.sent();
    let mut pads = harness::fill_disk(&ctx.dir);
    let before = ctx.bytes("J.jsonl");

    for args in [
        &[
            "run",
            "J.jsonl",
            "--channel",
            "email",
            "--to",
            "new@x.com",
            "--intent",
            "n1",
        ][..],
        &["resolve", "J.jsonl", &pending, "sent", "--by", "ops"],
        &["reset", "J.jsonl", &pending, "--by", "ops"],
    ] {
        let out = if args[0] == "run" {
            ctx.run_send(args)
        } else {
            ctx.run(args)
        };
        expect_full(&out, &args.join(" "));
        assert_eq!(ctx.sent(), seeded_sends, "{args:?}: nothing was sent");
        assert!(
            ctx.bytes("J.jsonl") == before,
            "{args:?}: the ledger is unchanged"
        );
        assert!(
            !ctx.dir.join("J.jsonl.lock").exists(),
            "{args:?}: the lock whose write failed is gone"
        );
        assert!(!ctx.dir.join("J.jsonl.decisions.jsonl").exists());
    }
    expect_exit(&ctx.run(&["audit", "J.jsonl"]), 1, "audit");
    expect_exit(&ctx.run(&["ls", "J.jsonl"]), 0, "ls");

    // Space freed: no lock is left to wait out, so the next write goes straight on.
    harness::free_disk(&mut pads);
    expect_exit(
        &ctx.run_send(&[
            "run",
            "J.jsonl",
            "--channel",
            "email",
            "--to",
            "new@x.com",
            "--intent",
            "n1",
        ]),
        0,
        "run after space is freed",
    );
    assert_eq!(ctx.sent(), seeded_sends + 1);
    let audit = ctx.run(&["audit", "J.jsonl", "--json"]);
    assert_eq!(
        json_stdout(&audit, "audit")["skippedLines"],
        0,
        "{}",
        stdout(&audit)
    );
}

/// An append that runs out of room part way through its line: the file is cut back, so
/// "nothing was written" is true. The ledger is padded with blank lines (which every
/// reader ignores) until 68 bytes are left in its last page, and the disk keeps one
/// free page, enough for the lock but not for the line.
fn jsonl_append_cut_back(ctx: &Ctx) {
    let path = ctx.dir.join("J.jsonl");
    let len = std::fs::metadata(&path).unwrap().len();
    let target = (len / 4096 + 1) * 4096 - 68;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.resize(target as usize, b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let seeded_sends = ctx.sent();
    let mut pads = harness::fill_disk(&ctx.dir);
    std::fs::remove_file(pads.pop().unwrap()).unwrap();

    let args = [
        "run",
        "J.jsonl",
        "--channel",
        "email",
        "--to",
        "torn@x.com",
        "--intent",
        "n1",
    ];
    let out = ctx.run_send(&args);
    expect_full(&out, "run with room for the lock only");
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    let now = ctx.bytes("J.jsonl").unwrap_or_default();
    assert!(
        now == bytes,
        "no torn fragment is left: {} bytes, {} before",
        now.len(),
        bytes.len()
    );
    assert!(!ctx.dir.join("J.jsonl.lock").exists());
    assert_eq!(ctx.sent(), seeded_sends);

    // When cutting back fails too (ftruncate made to fail by libfiu), it says so.
    if harness::skip::have_tools(&[("fiu-run", "fiu-utils")]) {
        let out = Command::new("fiu-run")
            .args(["-x", "-c", "enable name=posix/io/rw/ftruncate"])
            .arg(bin())
            .args(args)
            .arg("--")
            .args(append_key_command(&ctx.sends))
            .current_dir(&ctx.dir)
            .output()
            .expect("fiu-run runs");
        expect_full(&out, "run whose cut fails");
        let message = stderr(&out);
        assert!(
            message.contains("part of a line may be left")
                && !message.contains("nothing was written"),
            "{message}"
        );
        assert!(
            ctx.bytes("J.jsonl")
                .is_some_and(|now| now.len() > bytes.len())
        );
        assert_eq!(ctx.sent(), seeded_sends);
    }
    harness::free_disk(&mut pads);
}

/// A resolve whose ledger line fits in the ledger's last page, but whose decision needs
/// a page that is not there: the change is taken back, so the entry is not changed
/// without the decision that says who changed it.
fn jsonl_change_without_its_decision_is_taken_back(ctx: &Ctx) {
    expect_exit(
        &ctx.run(&[
            "run",
            "K.jsonl",
            "--channel",
            "email",
            "--to",
            "p@x.com",
            "--intent",
            "pend",
            "--",
            "sh",
            "-c",
            "exit 7",
        ]),
        3,
        "seed pending",
    );
    let pending = ctx.key("p@x.com", "pend");
    let path = ctx.dir.join("K.jsonl");
    let len = std::fs::metadata(&path).unwrap().len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.resize(((len / 4096 + 1) * 4096 - 1500) as usize, b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let mut pads = harness::fill_disk(&ctx.dir);
    std::fs::remove_file(pads.pop().unwrap()).unwrap();

    let out = ctx.run(&["resolve", "K.jsonl", &pending, "sent", "--by", "ops"]);
    expect_full(&out, "resolve with room for its line but not its decision");
    let now = ctx.bytes("K.jsonl").unwrap_or_default();
    assert!(
        now == bytes,
        "the change was taken back: {} bytes, {} before",
        now.len(),
        bytes.len()
    );
    assert!(!ctx.dir.join("K.jsonl.decisions.jsonl").exists());
    assert!(!ctx.dir.join("K.jsonl.lock").exists());

    harness::free_disk(&mut pads);
    expect_exit(
        &ctx.run(&["resolve", "K.jsonl", &pending, "sent", "--by", "ops"]),
        0,
        "resolve after space is freed",
    );
    let shown = json_stdout(&ctx.run(&["show", "K.jsonl", &pending, "--json"]), "show");
    assert_eq!(shown["entry"]["status"], "sent");
    assert_eq!(
        shown["decisions"].as_array().map(Vec::len),
        Some(1),
        "{shown}"
    );
}
