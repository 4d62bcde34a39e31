//! A tmux harness for end-to-end tests of the TUI: one tmux server on a socket of its
//! own per terminal, keys sent with `send-keys`, the screen read with `capture-pane`,
//! every wait a poll for what is expected (never a fixed sleep). Used by
//! tui_bulk_and_pager.rs, tui_faults.rs and tui_verify.rs (tui_e2e.rs keeps its own,
//! whose waits take explicit limits); include it with
//! `#[path = "common/tmux.rs"] #[macro_use] mod tmux;`.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

macro_rules! require_tmux {
    () => {
        if !$crate::tmux::tmux_available() {
            eprintln!("note: tmux is not installed; skipping this terminal test");
            return;
        }
    };
}

/// How long to wait for something that takes well under a second on a quiet machine;
/// CI runners and a machine shared with other builds are slower.
pub fn react() -> Duration {
    let factor = if std::env::var_os("CI").is_some() {
        3
    } else {
        1
    };
    Duration::from_secs(15 * factor)
}

static SOCKETS: AtomicUsize = AtomicUsize::new(0);

/// One tmux server with one window; dropping it kills the server, whatever state the
/// test left it in.
pub struct Term {
    socket: String,
    socket_path: Option<PathBuf>,
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
        let conf_path = dir.join(format!("{tag}.tmux.conf"));
        let mut lines = vec!["set -g remain-on-exit on"];
        lines.extend_from_slice(conf);
        std::fs::write(&conf_path, lines.join("\n") + "\n").unwrap();
        let mut term = Term {
            socket,
            socket_path: None,
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

    /// Polls the screen every 50 ms until `check` holds; fails with the last screen.
    pub fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let limit = react();
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
        self.wait_until(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Waits for `text`, which may be wrapped over lines: the screen's words are
    /// compared on one line.
    pub fn wait_for_words(&self, text: &str) -> String {
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        self.wait_until(&format!("{text:?}"), |s| words(s).contains(text))
    }

    /// Waits for the program in the window to end and returns its exit status (with
    /// tui_e2e.rs's SIGCHLD nudge for tmux/tmux#311).
    pub fn wait_exit(&self) -> i32 {
        let limit = react();
        let start = Instant::now();
        let server = self.display("#{pid}");
        loop {
            let state = self.display("#{pane_dead}:#{pane_dead_status}");
            if let Some(status) = state.strip_prefix("1:")
                && !status.is_empty()
            {
                return status.parse().expect("an exit status");
            }
            assert!(
                start.elapsed() < limit,
                "the program did not exit within {limit:?} ({state}); the screen:\n{}",
                self.screen()
            );
            if state.starts_with('1') {
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
