//! What a Postgres server's own settings mean for a ledger, through the binary: TLS as
//! `sslmode` asks (a self-signed certificate made for the test), the password from
//! `PGPASSWORD` or a password file instead of the URL, and a server whose commits are
//! not durable reported by `audit` and warned about by a writing command.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::harness::pg;
use crate::harness::*;

fn cli(args: &[&str]) -> Command {
    let mut cmd = send_once(args);
    for name in [
        "PGPASSWORD",
        "PGPASSFILE",
        "PGSSLMODE",
        "PGSSLROOTCERT",
        "PGUSER",
    ] {
        cmd.env_remove(name);
    }
    cmd.env("NO_COLOR", "1").env_remove("SEND_ONCE_LEDGER");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the binary runs")
}

/// The URL without its password: `postgres://sendonce@127.0.0.1:PORT/sendonce`.
fn without_password(cluster: &pg::PgCluster) -> String {
    cluster
        .url()
        .replace(&format!(":{}@", cluster.password()), "@")
}

fn no_secret(cluster: &pg::PgCluster, o: &Output, what: &str) {
    for text in [stdout(o), stderr(o)] {
        assert!(
            !text.contains(cluster.password()),
            "{what}: the password was printed: {text}"
        );
    }
}

/// A certificate authority and a server certificate for `localhost` signed by it, in
/// `dir`; the server's files are given to the cluster's owner, as Postgres requires
/// of its key.
fn make_certificates(dir: &Path, cluster: &pg::PgCluster) {
    let openssl = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs");
        assert!(o.status.success(), "openssl {args:?}: {}", stderr(&o));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "server.crt",
    ]);
    let data = cluster.data_dir();
    for name in ["server.crt", "server.key"] {
        let to = data.join(name);
        std::fs::copy(dir.join(name), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
        if let Some(owner) = cluster.owner() {
            std::os::unix::fs::chown(&to, Some(owner.uid), Some(owner.gid)).unwrap();
        }
    }
}

#[test]
fn tls_is_used_and_checked_as_sslmode_says() {
    // openssl makes the test's certificates.
    if !crate::harness::skip::have_tools(&[("openssl", "openssl")]) {
        return;
    }
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = cluster.url();

    // Without TLS on the server: `require` refuses to go on in the clear.
    let o = run(&mut cli(&["audit", &format!("{url}?sslmode=require")]));
    expect_exit(&o, 2, "sslmode=require against a server without TLS");
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    no_secret(&cluster, &o, "require without TLS");

    make_certificates(dir.path(), &cluster);
    // From now on the server takes TCP connections over TLS only, so a command that
    // works below went over TLS.
    let hba = cluster.data_dir().join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    let tls_only: String = rules
        .lines()
        .map(|line| match line.strip_prefix("host ") {
            Some(rest) => format!("hostssl {rest}\n"),
            None => format!("{line}\n"),
        })
        .collect();
    assert_ne!(rules, tls_only, "pg_hba.conf has host lines to change");
    std::fs::write(&hba, tls_only).unwrap();
    cluster.sql("ALTER SYSTEM SET ssl = on; SELECT pg_reload_conf();");
    let o = run(&mut cli(&["audit", &format!("{url}?sslmode=disable")]));
    expect_exit(&o, 2, "sslmode=disable against a server that wants TLS");
    assert!(stderr(&o).contains("no encryption"), "{}", stderr(&o));
    let tls_used = |url: &str| {
        let key = format!("tls-{}", url.len());
        let o = run(&mut cli(&["run", url, "--key", &key, "--", "true"]));
        expect_exit(&o, 0, &format!("run on {url}"));
        no_secret(&cluster, &o, url);
        cluster.sql(&format!(
            "SELECT count(*) FROM send_once WHERE key = '{key}'"
        ))
    };
    let root = dir.path().join("ca.crt");
    let root = root.to_str().unwrap();
    let local = url.replace("127.0.0.1", "localhost");
    // The same checks libpq makes: require encrypts without asking who answers;
    // verify-full wants the chain and the name; verify-ca the chain only.
    assert_eq!(tls_used(&format!("{url}?sslmode=require")), "1");
    assert_eq!(
        tls_used(&format!("{local}?sslmode=verify-full&sslrootcert={root}")),
        "1"
    );
    assert_eq!(
        tls_used(&format!("{url}?sslmode=verify-ca&sslrootcert={root}")),
        "1"
    );
    let o = run(&mut cli(&[
        "audit",
        &format!("{url}?sslmode=verify-full&sslrootcert={root}"),
    ]));
    expect_exit(&o, 2, "verify-full with a certificate for another name");
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("certificate not valid for name"),
        "{}",
        stderr(&o)
    );
    no_secret(&cluster, &o, "verify-full, wrong name");
    // A root that did not sign the server's certificate.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let o = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=other",
            "-keyout",
            "o.key",
            "-out",
            "o.crt",
        ])
        .current_dir(&other)
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = run(&mut cli(&[
        "audit",
        &format!(
            "{local}?sslmode=verify-ca&sslrootcert={}",
            other.join("o.crt").display()
        ),
    ]));
    expect_exit(&o, 2, "verify-ca with a root that did not sign it");
    assert!(stderr(&o).contains("UnknownIssuer"), "{}", stderr(&o));
    no_secret(&cluster, &o, "verify-ca, other root");
    let o = run(&mut cli(&["audit", &format!("{url}?sslmode=verify-full")]));
    expect_exit(&o, 2, "verify-full with no root for this CA on the machine");
    no_secret(&cluster, &o, "verify-full, system roots");
    let o = run(&mut cli(&["audit", &format!("{url}?sslmode=sometimes")]));
    expect_exit(&o, 2, "a bad sslmode");
    assert!(stderr(&o).contains("sslmode=sometimes"), "{}", stderr(&o));
}

#[test]
fn the_password_can_come_from_pgpassword_or_a_password_file() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let bare = without_password(&cluster);
    // Nowhere to find a password: the server's reason is given, and who was asked.
    let o = run(cli(&["init", &bare]).env("HOME", "/nonexistent"));
    expect_exit(&o, 2, "no password anywhere");
    let err = stderr(&o);
    assert!(err.contains("cannot connect"), "{err}");
    assert!(err.contains(&format!("port {}", cluster.port())), "{err}");
    assert!(err.contains("database sendonce"), "{err}");

    let o = run(cli(&["init", &bare]).env("PGPASSWORD", cluster.password()));
    expect_exit(&o, 0, "init with PGPASSWORD");
    no_secret(&cluster, &o, "PGPASSWORD");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgpass");
    std::fs::write(
        &file,
        format!(
            "# other servers first\nelsewhere:5432:*:*:wrong\n127.0.0.1:{}:sendonce:sendonce:{}\n",
            cluster.port(),
            cluster.password()
        ),
    )
    .unwrap();
    // libpq ignores a password file others can read, and so does send-once.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run(cli(&["audit", &bare]).env("PGPASSFILE", &file));
    expect_exit(&o, 2, "a password file others can read");
    // P7: said, with the file's name and what to do.
    assert!(
        stderr(&o).contains("because others can read it"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("chmod 600"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(file.to_str().unwrap()),
        "{}",
        stderr(&o)
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = run(cli(&["audit", &bare]).env("PGPASSFILE", &file));
    expect_exit(&o, 0, "audit with the password file");
    no_secret(&cluster, &o, "PGPASSFILE");
}

#[test]
fn a_server_that_does_not_keep_commits_is_reported_and_warned_about_once() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let url = cluster.url();
    let o = run(&mut cli(&["audit", &url, "--json"]));
    expect_exit(&o, 2, "audit before init: no ledger");
    expect_exit(&run(&mut cli(&["init", &url])), 0, "init");
    let durability = |o: &Output| json_stdout(o, "audit --json")["durability"].clone();
    let o = run(&mut cli(&["audit", &url, "--json"]));
    expect_exit(&o, 0, "audit");
    assert_eq!(durability(&o)["durable"], true, "{}", stdout(&o));
    assert_eq!(
        durability(&o)["setting"],
        "synchronous_commit=on, fsync=on",
        "{}",
        stdout(&o)
    );
    let o = run(&mut cli(&["run", &url, "--key", "durable", "--", "true"]));
    expect_exit(&o, 0, "run on a durable server");
    assert_eq!(stderr(&o), "", "no warning on a durable server");

    cluster.sql("ALTER DATABASE sendonce SET synchronous_commit = off;");
    let o = run(&mut cli(&["audit", &url, "--json"]));
    expect_exit(&o, 0, "audit");
    assert_eq!(durability(&o)["durable"], false, "{}", stdout(&o));
    assert_eq!(
        durability(&o)["setting"],
        "synchronous_commit=off, fsync=on"
    );
    let o = run(&mut cli(&["audit", &url]));
    assert!(
        stdout(&o).contains(
            "WARNING  the server's commits are not durable (synchronous_commit=off, fsync=on)"
        ),
        "{}",
        stdout(&o)
    );
    // A writing command warns once, on stderr, with the password hidden.
    let o = run(&mut cli(&[
        "run", &url, "--key", "lazy", "--", "echo", "sent",
    ]));
    expect_exit(&o, 0, "run on a server that does not keep commits");
    let err = stderr(&o);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("synchronous_commit=off"), "{err}");
    assert!(err.contains(&cluster.redacted_url()), "{err}");
    no_secret(&cluster, &o, "the warning");
    assert_eq!(stdout(&o), "sent\n");
}

/// What a fresh-context tester found (findings P1-P7), each through the binary.
#[test]
fn ledger_arguments_that_are_not_what_they_seem_are_refused_clearly() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = cluster.url();
    let in_dir = |args: &[&str]| run(cli(args).current_dir(dir.path()));

    // P1: a table with the ledger's column names but other types is not a ledger.
    cluster.sql(
        "CREATE TABLE wt (key int PRIMARY KEY, status int, entry int, claimed_at int, updated_at int);
         ALTER TABLE wt OWNER TO sendonce; INSERT INTO wt VALUES (1, 1, 1, 1, 1);",
    );
    for args in [vec!["audit"], vec!["audit", "--json"], vec!["ls"]] {
        let mut full = args.clone();
        let wt = format!("{url}?table=wt");
        full.insert(1, &wt);
        let o = in_dir(&full);
        expect_exit(&o, 2, &format!("{full:?}"));
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert!(said.contains("column key is integer, not text"), "{said}");
        no_secret(&cluster, &o, "a table of other types");
    }

    // P3: a libpq key=value string and a misspelt scheme are never a file name.
    let conninfo = format!(
        "host=127.0.0.1 port={} user=sendonce password={} dbname=sendonce",
        cluster.port(),
        cluster.password()
    );
    let misspelt = url.replacen("postgres://", "postgres//", 1);
    let other = url.replacen("postgres://", "pg://", 1);
    for ledger in [conninfo.as_str(), misspelt.as_str(), other.as_str()] {
        let before = snapshot(dir.path());
        let o = in_dir(&["run", ledger, "--key", "k", "--", "echo", "SENT"]);
        expect_exit(&o, 2, ledger);
        assert!(!stdout(&o).contains("SENT"), "it sent: {}", stdout(&o));
        no_secret(&cluster, &o, ledger);
        let o = in_dir(&["audit", ledger, "--json"]);
        expect_exit(&o, 2, ledger);
        assert_eq!(
            json_stdout(&o, "audit --json")["error"]["kind"],
            "bad_input",
            "{}",
            stdout(&o)
        );
        no_secret(&cluster, &o, ledger);
        assert_eq!(snapshot(dir.path()), before, "{ledger} made a file");
    }

    // P5: the scheme in any case.
    expect_exit(&in_dir(&["init", &url]), 0, "init");
    let shouting = url.replacen("postgres://", "PostgreSQL://", 1);
    expect_exit(&in_dir(&["audit", &shouting]), 0, "PostgreSQL://");

    // P6: a parameter send-once does not read is named.
    let o = in_dir(&["ls", &format!("{url}?bogus=1")]);
    expect_exit(&o, 2, "?bogus=1");
    assert!(
        stderr(&o).contains("parameter bogus is not one"),
        "{}",
        stderr(&o)
    );
    no_secret(&cluster, &o, "?bogus=1");
}

#[test]
fn a_send_whose_result_cannot_be_recorded_keeps_what_the_provider_said() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}?statement_timeout=300ms", cluster.url());
    expect_exit(&run(&mut cli(&["init", &url])), 0, "init");
    let psql = pg::find_binaries().unwrap().join("psql");
    let locked = dir.path().join("locked");
    // The send command has another session (in a process group of its own, which
    // outlives the send's) lock the table until after it returns, so the record waits
    // past the statement timeout; it says when the lock is held, so nothing here
    // depends on timing. Its output goes to files: send-once waits for the send's
    // pipes to close, and the locking session must not hold them.
    let script = dir.path().join("send.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             PGPASSWORD='{pw}' setsid '{psql}' -X -q -h 127.0.0.1 -p {port} -U sendonce -d sendonce \
             -c 'BEGIN' -c 'LOCK TABLE send_once IN ACCESS EXCLUSIVE MODE' \
             -c \"\\\\! touch '{locked}'\" -c 'SELECT pg_sleep(3)' -c 'COMMIT' >/dev/null 2>'{locked}.err' &\n\
             i=0; while [ ! -e '{locked}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done\n\
             echo '{{\"id\":\"msg_77\"}}'\n",
            pw = cluster.password(),
            psql = psql.display(),
            port = cluster.port(),
            locked = locked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = run(&mut cli(&[
        "run",
        &url,
        "--key",
        "unrecorded",
        "--",
        script.to_str().unwrap(),
    ]));
    expect_exit(
        &o,
        3,
        &format!(
            "a send whose record timed out (the locking session said {:?})",
            std::fs::read_to_string(dir.path().join("locked.err")).unwrap_or_default()
        ),
    );
    assert_eq!(
        stdout(&o),
        "{\"id\":\"msg_77\"}\n",
        "its output is passed on"
    );
    let err = stderr(&o);
    assert!(err.contains("could not be recorded"), "{err}");
    assert!(err.contains("statement_timeout"), "{err}");
    assert!(err.contains("provider id msg_77"), "{err}");
    // The command to paste names the ledger without its password, so that PGPASSWORD
    // or a password file is what supplies it, quoted for the shell (the URL holds a ?).
    let bare = without_password(&cluster);
    let printed = format!(
        "send-once resolve '{bare}?statement_timeout=300ms' unrecorded sent --provider-id msg_77"
    );
    assert!(err.contains(&printed), "{err}");
    no_secret(&cluster, &o, "unrecorded");
    // Once the lock is gone, the command pasted into a shell as printed settles the
    // entry with the id, the password coming from the environment.
    crate::harness::wait_until(
        "the killed command's lock to be released",
        crate::harness::pg_cli::LIMIT,
        || {
            cluster.sql("SELECT count(*) FROM pg_locks WHERE relation = 'send_once'::regclass")
                == "0"
        },
    );
    let bin_dir = bin().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = run(Command::new("sh")
        .arg("-c")
        .arg(&printed)
        .env("PATH", path)
        .env("PGPASSWORD", cluster.password())
        .env("SEND_ONCE_USER", "ana")
        .env_remove("SEND_ONCE_LEDGER"));
    expect_exit(&o, 0, "the printed resolve, pasted into sh");
    let o = run(&mut cli(&["show", &cluster.url(), "unrecorded", "--json"]));
    let entry = json_stdout(&o, "show --json")["entry"].clone();
    assert_eq!(entry["status"], "sent", "{entry}");
    assert_eq!(entry["providerId"], "msg_77", "{entry}");
}

/// Findings Q1/Q2/Q4: the commands send-once prints to paste are pasted as the one
/// argument each word is (a key with shell syntax in it is never run), and a failover
/// URL's `target_session_attrs=read-write` does not make looking fail.
#[test]
fn printed_commands_paste_as_they_read_and_read_write_urls_can_be_looked_at() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let ledger = ledger.to_str().unwrap();
    let key = "x;$(touch pwned) a";
    let o = run(
        cli(&["run", ledger, "--key", key, "--", "sh", "-c", "exit 9"]).current_dir(dir.path()),
    );
    expect_exit(&o, 3, "an unknown send");
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| {
            l.trim_start().starts_with("send-once resolve")
                && l.contains(" sent --expect pending --expect-attempt 1 --expect-claimed-at ")
        })
        .unwrap_or_else(|| panic!("no resolve line: {err}"))
        .trim()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = run(Command::new("sh")
        .arg("-c")
        .arg(&line)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("SEND_ONCE_USER", "ana"));
    expect_exit(&o, 0, &format!("{line} pasted into sh"));
    assert!(
        !dir.path().join("pwned").exists(),
        "the key was run: {line}"
    );
    let o = run(&mut cli(&["show", ledger, key, "--json"]));
    assert_eq!(json_stdout(&o, "show")["entry"]["status"], "sent");

    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let url = cluster.url();
    expect_exit(&run(&mut cli(&["init", &url])), 0, "init");
    let failover = format!("{url}?target_session_attrs=read-write");
    for args in [vec!["audit"], vec!["ls"], vec!["approvals"]] {
        let mut full = args.clone();
        full.insert(1, &failover);
        expect_exit(&run(&mut cli(&full)), 0, &format!("{full:?}"));
    }
}
