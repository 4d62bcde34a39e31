//! Files the tool writes are its owner's alone and never half-written, and a Postgres
//! URL, in any of the shapes libpq takes, is never taken for a file and its password
//! is never printed. Through the binary.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::harness::tmux::Term;
use crate::harness::*;

const KEY: &str = A_KEY;
const URL: &str = "postgres://alice:s3cretPW@db.example/sends";
const SHOWN: &str = "postgres://alice:***@db.example/sends";

/// The binary under a given umask: the shell sets it, then becomes send-once.
fn run_with_umask(dir: &Path, umask: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("sh runs")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A ledger with `drafts` queued drafts (ids 1..), and their payload file.
fn with_drafts(dir: &Path, drafts: usize) {
    std::fs::write(dir.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    for n in 0..drafts {
        let key = format!("{:064x}", n + 1);
        let o = run_in(
            dir,
            &[
                "draft",
                "submit",
                "L.db",
                "--key",
                &key,
                "--payload",
                "p.json",
            ],
        );
        expect_exit(&o, 0, "draft submit");
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

#[test]
fn approve_out_writes_an_owner_only_file_under_any_umask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    with_drafts(d, 3);
    let before = names(d);
    for (id, umask) in [("1", "000"), ("2", "022")] {
        let out = format!("approval-{id}.json");
        let o = run_with_umask(d, umask, &["approve", "L.db", id, "--out", &out]);
        expect_exit(&o, 0, &format!("approve {id} under umask {umask}"));
        assert_eq!(mode(&d.join(&out)), 0o600, "umask {umask}");
        let printed = run_in(d, &["approval", "L.db", id]);
        expect_exit(&printed, 0, "approval");
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(&out)).unwrap()).unwrap();
        assert_eq!(
            written,
            json_stdout(&printed, "approval"),
            "the whole approval"
        );
    }
    // A file that was there, readable by all, is replaced by an owner-only one.
    let old = d.join("approval-3.json");
    std::fs::write(&old, "old").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = run_with_umask(
        d,
        "000",
        &["approve", "L.db", "3", "--out", "approval-3.json"],
    );
    expect_exit(&o, 0, "approve over an existing file");
    assert_eq!(mode(&old), 0o600);
    assert!(
        std::fs::read_to_string(&old)
            .unwrap()
            .contains("payloadHash")
    );
    // Nothing but the three approvals is new: no temporary file is left.
    let mut want = before;
    want.extend(["approval-1.json", "approval-2.json", "approval-3.json"].map(String::from));
    want.sort();
    assert_eq!(names(d), want);
}

#[test]
fn approve_out_refuses_what_is_not_a_file_before_approving() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    with_drafts(d, 1);
    std::fs::create_dir(d.join("adir")).unwrap();
    for (out, says) in [
        ("/dev/null", "/dev/null is not a regular file"),
        ("adir", "adir is a directory"),
        ("missing/a.json", "not a file in an existing directory"),
        (URL, "that is a Postgres URL, not a file"),
    ] {
        let before = snapshot(d);
        let o = run_in(d, &["approve", "L.db", "1", "--out", out]);
        expect_exit(&o, 2, out);
        assert!(stderr(&o).contains(says), "{out}: {}", stderr(&o));
        assert!(!stderr(&o).contains("s3cretPW"), "{}", stderr(&o));
        assert_eq!(
            snapshot(d),
            before,
            "--out {out}: the draft was not approved"
        );
    }
}

/// Fills the filesystem holding `dir` until a write fails for want of space.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    loop {
        match filler.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling the tmpfs: {e}"),
        }
    }
}

#[test]
fn approve_out_on_a_full_disk_leaves_nothing_behind() {
    let Some(mount) = Tmpfs::mount("64k") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    with_drafts(d, 1);
    fill(&mount.point);
    let before = snapshot(&mount.point);
    let out = mount.point.join("approval.json");
    let o = run_in(d, &["approve", "L.db", "1", "--out", out.to_str().unwrap()]);
    expect_exit(&o, 2, "approve --out on a full disk");
    let err = stderr(&o);
    assert!(
        err.contains("could not be written") && err.contains("send-once approval L.db 1"),
        "{err}"
    );
    assert_eq!(
        snapshot(&mount.point),
        before,
        "no file, whole or partial, is left on the full disk"
    );
    // The approval itself was kept, and can still be printed.
    let printed = run_in(d, &["approval", "L.db", "1"]);
    expect_exit(&printed, 0, "approval");
    assert!(stdout(&printed).contains("payloadHash"));
}

/// A port on 127.0.0.1 that nothing listens on (a socket bound and closed): a
/// connection to it is refused at once, with no name to look up.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The one line a command prints for a Postgres ledger it cannot reach (`shown` is
/// its URL with the password hidden), the review queue's commands included, or, for
/// the tui, the refusal it gives first.
fn refused_as_unreachable(o: &Output, args: &[&str], shown: &str, port: u16) {
    let what = format!("{args:?}");
    expect_exit(o, 2, &what);
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    match args[0] {
        "tui" => assert_eq!(
            err,
            "send-once: the tui needs a terminal; for scripts use send-once audit, ls or approvals\n",
            "{what}"
        ),
        _ => assert!(
            err.starts_with(&format!(
                "send-once: cannot connect to the Postgres ledger {shown} (host 127.0.0.1, port {port}, database sends, user alice): "
            )) && err.contains("Connection refused"),
            "{what}: {err}"
        ),
    }
    assert!(!err.contains("s3cretPW"), "{what}: {err}");
    assert!(!stdout(o).contains("s3cretPW"), "{what}: {}", stdout(o));
}

#[test]
fn a_postgres_url_is_refused_the_same_way_everywhere_and_its_password_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    let port = closed_port();
    let host = format!("alice:s3cretPW@127.0.0.1:{port}");
    // Where the URL could be read as a path to an existing directory, a command that
    // took it for a file name would create an SQLite file in it.
    std::fs::create_dir_all(d.join(format!("postgres:/{host}"))).unwrap();
    for scheme in ["postgres", "postgresql"] {
        let url = format!("{scheme}://{host}/sends");
        let shown = format!("{scheme}://alice:***@127.0.0.1:{port}/sends");
        let mut said_by_ledger_commands = Vec::new();
        for args in every_command_with_a_ledger(&url) {
            let before = snapshot(d);
            let o = run_in(d, &args);
            refused_as_unreachable(&o, &args, &shown, port);
            assert_eq!(snapshot(d), before, "{args:?} created or changed a file");
            if !matches!(
                args[0],
                "tui" | "draft" | "approvals" | "approve" | "reject" | "approval" | "dispatch"
            ) {
                said_by_ledger_commands.push(stderr(&o));
            }
        }
        said_by_ledger_commands.dedup();
        assert_eq!(
            said_by_ledger_commands.len(),
            1,
            "every command says the same: {said_by_ledger_commands:?}"
        );
    }
    // The same from $SEND_ONCE_LEDGER, where the ledger may be left out.
    let url = format!("postgres://{host}/sends");
    let shown = format!("postgres://alice:***@127.0.0.1:{port}/sends");
    for args in [vec!["audit"], vec!["ls"], vec!["approvals"], vec!["tui"]] {
        let before = snapshot(d);
        let o = send_once(&args)
            .current_dir(d)
            .env("SEND_ONCE_LEDGER", &url)
            .output()
            .unwrap();
        refused_as_unreachable(&o, &args, &shown, port);
        assert_eq!(snapshot(d), before, "{args:?}");
    }
}

#[test]
fn a_postgres_password_is_hidden_wherever_an_argument_is_quoted_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    for (args, says) in [
        // clap quotes an argument it did not expect, or a value it refuses.
        (vec!["ls", "L.db", URL], "unexpected argument"),
        (vec!["ls", "L.db", "--status", URL], "invalid value"),
        // Our own messages quote a file that cannot be read.
        (
            vec!["run", "L.db", "--key", KEY, "--payload", URL, "--", "true"],
            "cannot read the payload",
        ),
        (
            vec![
                "draft",
                "submit",
                "L.db",
                "--key",
                KEY,
                "--payload",
                "p.json",
                "--facts",
                URL,
            ],
            "cannot read the facts",
        ),
    ] {
        let o = run_in(d, &args);
        expect_exit(&o, 2, &format!("{args:?}"));
        let err = stderr(&o);
        assert!(err.contains(says) && err.contains(SHOWN), "{args:?}: {err}");
        assert!(!err.contains("s3cretPW"), "{args:?}: {err}");
    }
}

/// The demo ledger's directory is the user's alone even under umask 000 (a
/// world-writable directory in /tmp would let anyone swap the demo's files).
#[test]
fn the_demo_directory_is_owner_only_under_any_umask() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let script = format!(
        "umask 000 && exec env TMPDIR='{}' '{}' tui --demo",
        tmp.display(),
        bin().display()
    );
    let term = Term::start(dir.path(), "demo", (100, 30), &[], &["sh", "-c", &script]);
    let demo_dir = || {
        std::fs::read_dir(&tmp)
            .unwrap()
            .next()
            .map(|e| e.unwrap().path())
    };
    term.wait_for("Approvals (8)");
    let made = demo_dir().expect("the demo's directory");
    let mode = mode(&made);
    term.press(&["q"]);
    wait_until(
        "the demo quit and removed its directory",
        Duration::from_secs(30),
        || demo_dir().is_none(),
    );
    assert_eq!(mode, 0o700, "{}", made.display());
}

// Postgres URL shapes without `//`, and password parameters other than `password=`
// (finding D8).

const SECRET: &str = "s3cretPW";

/// Each URL shape on 127.0.0.1 and a port nothing listens on (`PORT`), how a message
/// shows it, and what every command that takes a ledger says of it: "cannot connect",
/// or why the URL cannot be used, naming the parameter.
const URLS: &[(&str, &str, &str)] = &[
    (
        "postgres:alice:s3cretPW@127.0.0.1:PORT/sends",
        "postgres:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "postgresql:alice:s3cretPW@127.0.0.1:PORT/sends",
        "postgresql:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "POSTGRES:alice:s3cretPW@127.0.0.1:PORT/sends",
        "POSTGRES:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "postgres://127.0.0.1:PORT/sends?sslpassword=s3cretPW",
        "postgres://127.0.0.1:PORT/sends?sslpassword=***",
        "the URL's sslpassword is not supported: send-once does not present a client certificate (TLS with sslmode and sslrootcert is)",
    ),
    (
        "postgresql://alice:s3cretPW@127.0.0.1:PORT/sends?sslmode=require&SSLPassword=s3cretPW&password=s3cretPW",
        "postgresql://alice:***@127.0.0.1:PORT/sends?sslmode=require&SSLPassword=***&password=***",
        "the URL's SSLPassword is not supported: send-once does not present a client certificate (TLS with sslmode and sslrootcert is)",
    ),
];

/// The one line `args` must print for a URL shown as `shown` about which every
/// command that reaches for the server says `says`.
fn wanted(args: &[&str], shown: &str, says: &str, port: &str) -> String {
    if args[0] == "tui" {
        "send-once: the tui needs a terminal; for scripts use send-once audit, ls or approvals\n"
            .to_owned()
    } else if says != "cannot connect" {
        format!("send-once: {shown}: {says}\n")
    } else {
        format!(
            "send-once: cannot connect to the Postgres ledger {shown} (host 127.0.0.1, port {port}, database sends, user alice): error connecting to server: Connection refused"
        )
    }
}

#[test]
fn every_postgres_url_shape_is_refused_everywhere_with_its_secret_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    let port = closed_port().to_string();
    let urls: Vec<(String, String, &str)> = URLS
        .iter()
        .map(|(url, shown, says)| {
            (
                url.replace("PORT", &port),
                shown.replace("PORT", &port),
                *says,
            )
        })
        .collect();
    // Read as a path, a scheme without `//` names a file in a directory that exists
    // here, so a command that took it for a file name would create an SQLite file.
    for (url, _, _) in &urls {
        if let Some((parent, _)) = url.rsplit_once('/')
            && !url.contains("//")
        {
            std::fs::create_dir_all(d.join(parent)).unwrap();
        }
    }
    for (url, shown, says) in &urls {
        for args in every_command_with_a_ledger(url) {
            let before = snapshot(d);
            let o = run_in(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            let err = stderr(&o);
            assert!(
                err.starts_with(&wanted(&args, shown, says, &port)),
                "{args:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(!err.contains(SECRET), "{args:?}: {err}");
            assert!(!stdout(&o).contains(SECRET), "{args:?}: {}", stdout(&o));
            assert_eq!(snapshot(d), before, "{args:?} created or changed a file");
        }
        // From $SEND_ONCE_LEDGER, where the ledger is left out.
        for args in [vec!["audit"], vec!["ls"], vec!["approvals"], vec!["tui"]] {
            let before = snapshot(d);
            let o = send_once(&args)
                .current_dir(d)
                .env("SEND_ONCE_LEDGER", url)
                .output()
                .unwrap();
            expect_exit(&o, 2, &format!("SEND_ONCE_LEDGER={url} {args:?}"));
            let err = stderr(&o);
            assert!(
                err.starts_with(&wanted(&args, shown, says, &port)),
                "SEND_ONCE_LEDGER={url} {args:?}: {err}"
            );
            assert!(!err.contains(SECRET), "{args:?}: {err}");
            assert_eq!(snapshot(d), before, "{args:?}");
        }
        // Quoted back by the argument parser and by our own messages.
        for (args, says) in [
            (vec!["ls", "L.db", url], "unexpected argument"),
            (
                vec!["run", "L.db", "--key", KEY, "--payload", url, "--", "true"],
                "cannot read the payload",
            ),
            (
                vec!["approve", "L.db", "1", "--out", url],
                "that is a Postgres URL, not a file",
            ),
        ] {
            let o = run_in(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            let err = stderr(&o);
            assert!(
                err.contains(says) && err.contains(shown.as_str()),
                "{args:?}: {err}"
            );
            assert!(!err.contains(SECRET), "{args:?}: {err}");
        }
    }
}
