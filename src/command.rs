//! Runs an outside command (a send command, a recheck command): argv as given (no
//! shell), input on stdin, extra environment, an optional time limit that kills the
//! command's whole process group. Its stdout is kept (up to 1 MiB); the tail of its
//! stderr is kept for the person who has to reconcile a failure.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use crate::text::visible;

/// The most of a command's stdout kept as its result; the rest is read and dropped so
/// the command never blocks on a full pipe.
const MAX_STDOUT: usize = 1 << 20;
/// How long, after a time limit killed a command's group, its pipes may stay open
/// before they are abandoned.
const AFTER_KILL: Duration = Duration::from_millis(500);
/// How much of a command's stderr is passed through to ours.
const ECHO_LIMIT: usize = 64 * 1024;

/// How much of the end of a command's stderr is kept for the entry's error.
const STDERR_TAIL: usize = 2000;

/// How a command that started ended, and what it printed.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status, signal or time-out.
    pub how: Ending,
    /// Its stdout, up to 1 MiB.
    pub stdout: Vec<u8>,
    /// True when it printed more than was kept.
    pub stdout_truncated: bool,
    /// The last 2000 bytes or so of its stderr, as it wrote them (lossy UTF-8): make it
    /// visible before it reaches a terminal.
    pub stderr_tail: String,
}

/// How a command ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (this number; 0 when the system named neither).
    Signalled(i32),
    /// It ran past this limit, and its whole process group was killed.
    TimedOut(Duration),
}

impl Finished {
    /// How the command ended, in words, with the tail of its stderr.
    pub fn describe(&self, timeout_text: Option<&str>) -> String {
        let how = match self.how {
            Ending::Exited(code) => format!("the command exited with status {code}"),
            Ending::Signalled(signal) => {
                format!(
                    "the command was killed by signal {signal} ({})",
                    signal_name(signal)
                )
            }
            Ending::TimedOut(limit) => format!(
                "the command timed out after {} and was killed",
                timeout_text.map_or_else(|| format!("{}ms", limit.as_millis()), str::to_owned)
            ),
        };
        let tail = self.stderr_tail.trim();
        if tail.is_empty() {
            how
        } else {
            format!("{how}; stderr: {tail}")
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// A command to run, and what it is given.
pub struct SendCommand<'a> {
    /// The program and its arguments, run without a shell.
    pub argv: &'a [String],
    /// Written to its stdin, which is then closed; None gives it `/dev/null`.
    pub payload: Option<&'a [u8]>,
    /// Added to the environment it inherits (`SEND_ONCE_KEY` and the like).
    pub env: Vec<(&'static str, String)>,
    /// Past this its process group is killed; None waits for as long as it runs.
    pub timeout: Option<Duration>,
    /// Pass the command's stderr through to ours as it comes (made visible), as a
    /// command line does. Off, as a full-screen UI runs it, only the tail is kept and
    /// the command gets no controlling terminal (a session of its own), so it cannot
    /// draw on the screen through `/dev/tty`.
    pub echo_stderr: bool,
}

/// Starts the command and waits for it. An error means it never started, so it cannot
/// have sent anything.
pub async fn run(command: SendCommand<'_>) -> std::io::Result<Finished> {
    let mut outside = prepare(&command)?;
    // The command leads a session of its own: noted, so that what it started is seen
    // running even after a kill -9 of this process (procs::notes). The note is made
    // first: a send that could not be noted is not started (T1).
    let starting = if command.echo_stderr {
        Some(crate::procs::notes::note_starting()?)
    } else {
        None
    };
    let mut child = outside.spawn()?;
    let pid = child.id();
    let _session_note = match (starting, pid) {
        (Some(note), Some(pid)) => Some(note.started(pid)),
        _ => None,
    };
    // Whoever drops this future (a reconcile told to stop, a screen closed while a
    // verify runs) will never read the answer: stop what was started rather than leave
    // it running unobserved.
    let mut guard = KillOnDrop(pid);

    let feed = feed_stdin(child.stdin.take(), command.payload.map(<[u8]>::to_vec));
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| std::io::Error::other("no stderr"))?;
    let stdout = collect_stdout(stdout);
    let stderr = tee_stderr(stderr, command.echo_stderr);
    // The time limit covers the command and everything holding its pipes open (a
    // background child it left behind), so a limit always ends the wait.
    // Boxed, so that it can be dropped (and its readers with it) while `child` lives on.
    let mut all = Box::pin(async { tokio::join!(child.wait(), feed, stdout, stderr) });
    let (status, timed_out) = match wait_within(&mut all, command.timeout, pid).await {
        Waited::Done(done) => (done, false),
        Waited::TimedOut(done) => (done, true),
        Waited::Abandoned(limit) => {
            // Something outside the group (a `setsid` child) still holds the pipes:
            // the limit is the limit, so stop reading. The group leader was killed;
            // reap it.
            drop(all);
            let _ = child.wait().await;
            guard.0 = None;
            return Ok(Finished {
                how: Ending::TimedOut(limit),
                stdout: Vec::new(),
                stdout_truncated: false,
                stderr_tail: "a process it started outside its process group kept its output open"
                    .into(),
            });
        }
    };
    guard.0 = None;
    // Its attempt ends here, whatever it left running in its session (`cmd &`, a
    // `timeout` wrapper whose child outlived it): that would send on after the ledger
    // records the attempt ended, and be taken over or retried alongside.
    if let Some(session) = pid {
        crate::procs::kill_session(session);
    }
    let (status, (), (stdout, truncated), stderr_tail) = status;
    let status = if timed_out { None } else { Some(status?) };
    Ok(Finished {
        how: ending(status, command.timeout),
        stdout,
        stdout_truncated: truncated,
        stderr_tail,
    })
}

/// The command as it is started: its argv without a shell, the payload's pipe or
/// `/dev/null` on stdin, pipes for stdout and stderr, and a session of its own.
fn prepare(command: &SendCommand<'_>) -> std::io::Result<Command> {
    let (program, args) = command
        .argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("no command given"))?;
    let mut outside = Command::new(program);
    outside
        .args(args)
        .envs(command.env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(if command.payload.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    in_a_session_of_its_own(&mut outside, command.echo_stderr);
    Ok(outside)
}

/// A session of its own (and so a process group of its own), so that a time limit
/// stops everything it started: what it starts stays in the session even in a
/// process group of its own (`timeout`, a shell's job control), and only setsid(2)
/// leaves it. No controlling terminal either: it cannot write to /dev/tty over a
/// full-screen UI or read the operator's keys, and a send is not interactive.
///
/// From the command line it also dies with us: a claim with no time limit may be
/// taken over once its claimer is seen gone (ledger::claimer), so a send must not
/// outlive a kill -9 of the process that claimed it. The signal comes when the
/// forking *thread* ends, so only the main thread (the command line's one thread)
/// asks for it; a program forking from a pool thread that may end keeps its sends.
///
/// `from_the_command_line` is whether this is a send of the command line's; anything
/// else (an MCP proxy's upstream, whose session is noted instead) outlives a kill -9
/// of this process, to be seen running.
pub(crate) fn in_a_session_of_its_own(outside: &mut Command, from_the_command_line: bool) {
    let parent = std::process::id();
    // SAFETY: gettid(2) has no preconditions.
    let dies_with_us = from_the_command_line && unsafe { libc::gettid() } as u32 == parent;
    // SAFETY: setsid(2), prctl(2) and getppid(2) are async-signal-safe, and the closure
    // does nothing else between fork and exec.
    unsafe {
        outside.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if dies_with_us {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // Gone before the line above took hold: nobody will read the answer.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::other(
                        "send-once ended before the command started",
                    ));
                }
            }
            Ok(())
        });
    }
}

/// Writes the payload to the command's stdin, then closes it.
async fn feed_stdin(stdin: Option<ChildStdin>, payload: Option<Vec<u8>>) {
    if let (Some(mut stdin), Some(payload)) = (stdin, payload) {
        // A command that does not read its stdin closes the pipe; that is its
        // business, not a failure of the send.
        let _ = stdin.write_all(&payload).await;
        let _ = stdin.shutdown().await;
    }
}

/// The command's stdout up to [`MAX_STDOUT`], and whether there was more.
async fn collect_stdout(mut stdout: ChildStdout) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    while let Ok(n) = stdout.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = MAX_STDOUT.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        truncated |= n > room;
    }
    (kept, truncated)
}

/// Reads the command's stderr to its end, passing it through to ours when `echo`, and
/// gives back its last [`STDERR_TAIL`] bytes or so.
async fn tee_stderr(mut stderr: ChildStderr, echo: bool) -> String {
    // Passed through live, a line at a time, with control characters made visible:
    // a provider's error text can carry terminal escapes. The raw end is kept.
    let mut tail: Vec<u8> = Vec::new();
    let mut echoing = Echo::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if echo {
            echoing.pass(&buf[..n]).await;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    echoing.finish().await;
    let start = tail.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&tail[start..]).into_owned()
}

/// The command's stderr passed through to ours, a line at a time, made visible.
///
/// Echoed up to a bound: a command that writes megabytes of stderr would bury our own
/// verdict (and fill a log) in it; the rest is counted and said.
struct Echo {
    ours: tokio::io::Stderr,
    /// The line not yet passed through.
    line: Vec<u8>,
    echoed: usize,
    unshown: usize,
}

impl Default for Echo {
    fn default() -> Echo {
        Echo {
            ours: tokio::io::stderr(),
            line: Vec::new(),
            echoed: 0,
            unshown: 0,
        }
    }
}

impl Echo {
    /// Passes through every whole line in `bytes` (or 8 KiB of one), keeping the rest.
    async fn pass(&mut self, bytes: &[u8]) {
        if self.echoed >= ECHO_LIMIT {
            self.unshown += bytes.len();
            return;
        }
        for &byte in bytes {
            if self.echoed >= ECHO_LIMIT {
                self.unshown += 1;
                continue;
            }
            self.line.push(byte);
            if byte == b'\n' || self.line.len() >= 8192 {
                let shown = String::from_utf8_lossy(&self.line);
                // tokio's stderr hands the write to another thread: flushed,
                // each line is out before the next, and before our own verdict.
                let _ = self.ours.write_all(visible(&shown).as_bytes()).await;
                let _ = self.ours.flush().await;
                self.echoed += self.line.len();
                self.line.clear();
            }
        }
    }

    /// Passes through the last, unended line, and says how much was not shown.
    async fn finish(mut self) {
        if !self.line.is_empty() {
            let shown = String::from_utf8_lossy(&self.line);
            let _ = self
                .ours
                .write_all(format!("{}\n", visible(&shown)).as_bytes())
                .await;
        }
        if self.unshown > 0 {
            let _ = self
                .ours
                .write_all(
                    format!(
                        "[{} more bytes of the command's stderr not shown; its last lines are kept with its error]\n",
                        self.unshown
                    )
                    .as_bytes(),
                )
                .await;
        }
        let _ = self.ours.flush().await;
    }
}

/// What waiting for the command and its pipes came to.
enum Waited<T> {
    /// It ended within its limit (or had none).
    Done(T),
    /// Its limit passed; its group was killed, and then it ended.
    TimedOut(T),
    /// Its limit (this one) passed, its group was killed, and its pipes stayed open
    /// [`AFTER_KILL`] longer.
    Abandoned(Duration),
}

/// Waits for `all` within `limit`; past it, kills the process group of `pid` and waits
/// [`AFTER_KILL`] more.
async fn wait_within<F: Future + Unpin>(
    all: &mut F,
    limit: Option<Duration>,
    pid: Option<u32>,
) -> Waited<F::Output> {
    let Some(limit) = limit else {
        return Waited::Done(all.await);
    };
    match tokio::time::timeout(limit, &mut *all).await {
        Ok(done) => Waited::Done(done),
        Err(_) => {
            kill_group(pid);
            match tokio::time::timeout(AFTER_KILL, all).await {
                Ok(done) => Waited::TimedOut(done),
                Err(_) => Waited::Abandoned(limit),
            }
        }
    }
}

/// How the command ended: its exit status (None when its time limit ended it).
fn ending(status: Option<std::process::ExitStatus>, timeout: Option<Duration>) -> Ending {
    match status {
        Some(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signalled(signal),
                (None, None) => Ending::Signalled(0),
            }
        }
        None => Ending::TimedOut(timeout.unwrap_or_default()),
    }
}

/// Kills the command's process group when dropped while armed.
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Kills everything the command started: its process group, and every process of the
/// session it leads that moved to a group of its own, so the pipes close, the readers
/// finish, and nothing it started sends on after its attempt is recorded as ended.
fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group the child leads;
    // it touches no memory of ours.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
    crate::procs::kill_session(pid);
}

/// Where a command would be found, so a typo is refused before anything is claimed.
pub fn resolve_program(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}
