//! A tmux harness for end-to-end tests of the TUI: one tmux server on a socket of its
//! own per terminal, keys sent with `send-keys`, the screen read with `capture-pane`,
//! every wait a poll for what is expected (never a fixed sleep). A test that needs it
//! starts with `require_tmux!();`, which skips it where tmux is missing (saying so)
//! and fails it under CI.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::patience;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether tmux is here; if not, the calling test is skipped saying so (or fails,
/// under CI).
pub fn usable() -> bool {
    if tmux_available() {
        return true;
    }
    super::skip::missing(
        "tmux is not installed (Debian package tmux), and this test drives a real terminal",
    );
    false
}

/// Returns from the calling test when tmux is missing, having said so.
#[allow(unused_macros)]
macro_rules! require_tmux {
    () => {
        if !$crate::harness::tmux::usable() {
            return;
        }
    };
}

/// How long to wait for the UI to react to a key or a change, which takes well under
/// a second on a quiet machine.
pub fn react() -> Duration {
    patience(15)
}

static SOCKETS: AtomicUsize = AtomicUsize::new(0);

/// One tmux server with one window; dropping it kills the server, whatever state the
/// test left it in.
pub struct Term {
    socket: String,
    socket_path: Option<PathBuf>,
    /// Holds the server's configuration file, out of the test's directory: a test may
    /// compare that directory before and after, or have filled its disk.
    _conf_dir: tempfile::TempDir,
}

impl Term {
    pub fn start<S: AsRef<OsStr>>(
        dir: &Path,
        tag: &str,
        (width, height): (u16, u16),
        conf: &[&str],
        command: &[S],
    ) -> Term {
        let socket = format!(
            "so-e2e-{}-{tag}-{}",
            std::process::id(),
            SOCKETS.fetch_add(1, Ordering::Relaxed)
        );
        let conf_dir = tempfile::tempdir().expect("a directory for tmux's configuration");
        let conf_path = conf_dir.path().join(format!("{tag}.tmux.conf"));
        let mut lines = vec!["set -g remain-on-exit on"];
        lines.extend_from_slice(conf);
        std::fs::write(&conf_path, lines.join("\n") + "\n").unwrap();
        let mut term = Term {
            socket,
            socket_path: None,
            _conf_dir: conf_dir,
        };
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&term.socket)
            .arg("-f")
            .arg(&conf_path)
            .args(["new-session", "-d", "-s", "e2e", "-c"])
            .arg(dir)
            .arg("-x")
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg("--")
            .args(command)
            .current_dir(dir)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            stderr(&out)
        );
        term.socket_path = Some(PathBuf::from(term.display("#{socket_path}")));
        term
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            stderr(&out)
        );
        stdout(&out)
    }

    /// Types `text` as it is (no key names).
    pub fn type_text(&self, text: &str) {
        self.ok(&["send-keys", "-t", "e2e", "-l", "--", text]);
    }

    /// Presses keys by tmux name: "Enter", "Space", "j".
    pub fn press(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e", "--"];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    pub fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn display(&self, format: &str) -> String {
        self.ok(&["display-message", "-p", "-t", "e2e", format])
            .trim_end()
            .to_owned()
    }

    /// The screen with the escape sequences tmux would need to redraw it: only the
    /// styles (SGR) of what the program drew, never the program's raw bytes.
    pub fn screen_with_escapes(&self) -> String {
        self.ok(&["capture-pane", "-p", "-e", "-t", "e2e"])
    }

    /// Polls the screen every 50 ms until `check` holds, for up to [`react`]; fails
    /// with the last screen.
    pub fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        self.wait_until_within(what, react(), check)
    }

    /// [`Term::wait_until`] with a limit of the caller's: a change that must show
    /// within a given time, or a step known to take long.
    pub fn wait_until_within(
        &self,
        what: &str,
        limit: Duration,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            if start.elapsed() > limit {
                panic!("waited {limit:?} for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_within(text, react())
    }

    pub fn wait_for_within(&self, text: &str, limit: Duration) -> String {
        self.wait_until_within(&format!("{text:?}"), limit, |s| s.contains(text))
    }

    /// Waits for `text`, which may be wrapped over lines: the screen's words are
    /// compared on one line.
    pub fn wait_for_words(&self, text: &str) -> String {
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        self.wait_until(&format!("{text:?}"), |s| words(s).contains(text))
    }

    /// Waits for the program in the window to end and returns its exit status; a
    /// program killed by a signal fails the test, naming the signal.
    pub fn wait_exit(&self) -> i32 {
        self.wait_exit_within(react())
    }

    /// [`Term::wait_exit`] with a limit of the caller's.
    ///
    /// tmux built with libutempter can miss the SIGCHLD of a pane's program that ends
    /// just as the pane's terminal closes (tmux/tmux#311): the pane shows dead but the
    /// status never comes. The known workaround is to send the server a SIGCHLD, which
    /// makes it reap; it is harmless when nothing is waiting to be reaped.
    pub fn wait_exit_within(&self, limit: Duration) -> i32 {
        let start = Instant::now();
        let server = self.display("#{pid}");
        loop {
            let state = self.display("#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}");
            let parts: Vec<&str> = state.split(':').collect();
            if parts[0] == "1" && !parts[2].is_empty() {
                panic!(
                    "the program was killed by signal {}; the screen:\n{}",
                    parts[2],
                    self.screen()
                );
            }
            if parts[0] == "1" && !parts[1].is_empty() {
                return parts[1].parse().expect("an exit status");
            }
            assert!(
                start.elapsed() < limit,
                "the program did not exit within {limit:?} ({state}); the screen:\n{}",
                self.screen()
            );
            if parts[0] == "1" {
                let _ = Command::new("kill").args(["-CHLD", &server]).status();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Quits the UI with `q` and insists it ends cleanly.
    pub fn quit(&self) {
        self.press(&["q"]);
        assert_eq!(self.wait_exit(), 0, "q quits cleanly");
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}
