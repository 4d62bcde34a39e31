//! Real MCP clients and servers from the package registries, for the tests that check
//! `send-once mcp` and `send-once mcp proxy` against what other implementations send
//! and accept: the official Python SDK's stdio client (driven by
//! `tests/interop/mcp_client.py`), the MCP Inspector's CLI, and
//! `@modelcontextprotocol/server-filesystem` as an upstream server.
//!
//! `tests/interop/install.sh` installs them, pinned, into `.interop/` at the repository
//! root (.ci/run calls it). They are looked up there and nowhere else: a tool on PATH
//! would be whatever version the machine happens to have, and a test that passed
//! against it would say nothing about the pinned one. A tool that is missing, or there
//! at another version, skips the test by the harness's rule (`skip.rs`: one line, a
//! failure under `CI=true`).
//!
//! Both clients start the server with a reduced environment (HOME, PATH, SHELL, TERM,
//! USER and a few more, as their SDKs do), not the test's: pass what the server needs
//! through the script's `env` (Python) or `-e KEY=VALUE` (Inspector).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::{patience, skip};

/// The Python SDK's version, as `tests/interop/install.sh` pins it (`MCP_VERSION`);
/// the npm packages' versions are read from `tests/interop/package.json` instead.
pub const PYTHON_MCP_VERSION: &str = "2.3.0";

/// What a test says when a tool is missing: where it should be and what puts it there.
const INSTALL: &str = "tests/interop/install.sh installs it";

/// The repository root, where `.interop/` and `tests/interop/` are, whatever directory
/// the test runs in.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn interop_dir() -> PathBuf {
    repo_root().join(".interop")
}

/// The venv's python, if the venv has the pinned Python SDK. Looking for pip's
/// `mcp-VERSION.dist-info` directory costs no process, and a venv with another version
/// is as good as none: the tests pin what they were checked against.
pub fn python_mcp() -> Option<PathBuf> {
    let venv = interop_dir().join("venv");
    let python = venv.join("bin/python");
    let dist_info = format!("mcp-{PYTHON_MCP_VERSION}.dist-info");
    let has_mcp = std::fs::read_dir(venv.join("lib")).is_ok_and(|dirs| {
        dirs.flatten()
            .any(|dir| dir.path().join("site-packages").join(&dist_info).is_dir())
    });
    if python.exists() && has_mcp {
        return Some(python);
    }
    skip::missing(&format!(
        "not installed: the Python MCP SDK (mcp {PYTHON_MCP_VERSION}) in .interop/venv; {INSTALL}"
    ));
    None
}

/// The version `tests/interop/package.json` pins for `package`.
fn pinned(package: &str) -> String {
    let manifest = repo_root().join("tests/interop/package.json");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let json: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", manifest.display()));
    json["dependencies"][package]
        .as_str()
        .unwrap_or_else(|| panic!("{} pins no {package}", manifest.display()))
        .to_owned()
}

/// `package`'s directory under `.interop/node/node_modules`, if the version installed
/// there is the pinned one; else the test is skipped (or fails, under CI) naming it.
fn npm_package(package: &str) -> Option<PathBuf> {
    let want = pinned(package);
    let dir = interop_dir().join("node/node_modules").join(package);
    let have = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    match have {
        Some(have) if have == want => Some(dir),
        Some(have) => {
            skip::missing(&format!(
                "{package} {have} is in .interop/node, not the pinned {want}; {INSTALL}"
            ));
            None
        }
        None => {
            skip::missing(&format!(
                "not installed: {package} {want} in .interop/node; {INSTALL}"
            ));
            None
        }
    }
}

/// `package`'s file `relative`, which the pinned version ships; a tree where it is
/// missing was installed by hand or cut short, and is reported as not installed.
fn npm_file(package: &str, relative: &str) -> Option<PathBuf> {
    let file = npm_package(package)?.join(relative);
    if file.is_file() {
        return Some(file);
    }
    skip::missing(&format!(
        "{package} in .interop/node has no {relative}; {INSTALL}"
    ));
    None
}

/// Node 22 from the npm package `node`: the Inspector needs >= 22.19, which the
/// machine's own node (20 on Debian 12 with NodeSource, 18 in Debian) is not.
pub fn node22() -> Option<PathBuf> {
    npm_file("node", "bin/node")
}

/// The node binary and the Inspector's CLI entry script. The script is run directly,
/// not through the `mcp-inspector --cli` launcher, which only forwards to it.
pub fn inspector_cli() -> Option<(PathBuf, PathBuf)> {
    let node = node22()?;
    let cli = npm_file(
        "@modelcontextprotocol/inspector",
        "clients/cli/build/index.js",
    )?;
    Some((node, cli))
}

/// The command line that starts `@modelcontextprotocol/server-filesystem` with Node 22
/// (the caller appends the directories it may touch): a real MCP server with tools
/// that have output schemas, for the proxy to stand in front of.
pub fn server_filesystem() -> Option<Vec<String>> {
    let node = node22()?;
    let server = npm_file("@modelcontextprotocol/server-filesystem", "dist/index.js")?;
    Some(vec![
        node.display().to_string(),
        server.display().to_string(),
    ])
}

/// The script that drives the Python SDK's client: see its docstring for the steps
/// and the one JSON line each prints.
pub fn mcp_client_py() -> PathBuf {
    repo_root().join("tests/interop/mcp_client.py")
}

/// Runs the Python SDK's client against the server `server` (a command line) with
/// `script` on its stdin, within `patience(60)`. None when the SDK is not installed
/// (the test is skipped, or fails under CI). Its stdout has one JSON line for the
/// connection and one per step (`json_lines`); the server's stderr is in its stderr.
pub fn python_client(script: &serde_json::Value, server: &[String]) -> Option<Output> {
    let python = python_mcp()?;
    let mut cmd = Command::new(python);
    cmd.arg(mcp_client_py()).arg("--").args(server);
    Some(output_within(
        &mut cmd,
        script.to_string().as_bytes(),
        "the Python MCP client's run",
        patience(60),
    ))
}

/// Runs one Inspector CLI method against the server `server` (a command line), within
/// `patience(60)`. `method_args` are the Inspector's options: `--method tools/list`, or
/// `--method tools/call --tool-name NAME --tool-arg k=v` (or `--tool-args-json '{..}'`
/// for values that are not strings), `--format json` for one JSON object on stdout
/// (`{"result": ...}`), `-e KEY=VALUE` for the server's environment. The server's
/// command line comes after `--`, so its own options are not taken for the
/// Inspector's. Its exit code: 0, 1 for an error (the envelope `{"error": ...}` on
/// stderr), 5 for a tool result with `isError: true`. It negotiates with `initialize`
/// at 2025-11-25 unless given `--protocol-era auto` or `modern` (`server/discover`,
/// 2026-07-28). None when it is not installed.
pub fn inspector_call(server: &[String], method_args: &[&str]) -> Option<Output> {
    let (node, cli) = inspector_cli()?;
    let mut cmd = Command::new(node);
    cmd.arg(cli).args(method_args).arg("--").args(server);
    Some(output_within(
        &mut cmd,
        b"",
        "the MCP Inspector's call",
        patience(60),
    ))
}

/// Each line of the client's stdout as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"))
        })
        .collect()
}

/// Runs `cmd` with `input` on its stdin and collects its output, failing with `what`
/// (and what it printed so far) past `limit`, so a test never hangs on a client.
///
/// The command gets a process group of its own. Past the limit the group is sent
/// SIGINT first: the Python SDK starts its server in a session of its own, out of the
/// group's reach, and stops it only on the way out of its `async with`, which an
/// interrupt takes and a kill does not. Then the group is killed, as it is once the
/// command has exited, so nothing it left behind in the group outlives the test.
fn output_within(cmd: &mut Command, input: &[u8], what: &str, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let group = child.id() as libc::pid_t;
    let signal_group = |signal| {
        // SAFETY: kill has no memory preconditions; the group is the child's own.
        unsafe { libc::kill(-group, signal) };
    };
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    // A thread of its own: a client that answers before it has read all its input
    // would fill its stdout pipe while this still writes.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let (done, finished) = mpsc::channel();
    let streams: Vec<Arc<Mutex<Vec<u8>>>> = [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ]
    .into_iter()
    .map(|mut stream| {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (sink, done) = (Arc::clone(&bytes), done.clone());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => sink.lock().unwrap().extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let _ = done.send(());
        });
        bytes
    })
    .collect();
    let so_far =
        |index: usize| String::from_utf8_lossy(&streams[index].lock().unwrap()).into_owned();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break status;
        }
        if start.elapsed() > limit {
            signal_group(libc::SIGINT);
            let interrupted = Instant::now();
            while child.try_wait().expect("the child's status").is_none()
                && interrupted.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            signal_group(libc::SIGKILL);
            let _ = child.wait();
            panic!(
                "{what} did not finish within {limit:?}, and {cmd:?} was stopped: stdout {:?} stderr {:?}",
                so_far(0),
                so_far(1)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    signal_group(libc::SIGKILL);
    for _ in 0..streams.len() {
        finished.recv_timeout(patience(10)).unwrap_or_else(|_| {
            panic!(
                "{what}: {cmd:?} exited, yet a process it started still holds its output open: stdout {:?} stderr {:?}",
                so_far(0),
                so_far(1)
            )
        });
    }
    Output {
        status,
        stdout: std::mem::take(&mut *streams[0].lock().unwrap()),
        stderr: std::mem::take(&mut *streams[1].lock().unwrap()),
    }
}
