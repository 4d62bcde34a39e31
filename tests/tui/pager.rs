//! Lending the terminal to `$PAGER` and taking it back, and copying to the clipboard
//! with OSC 52, in a real terminal: tmux on a private socket runs this test binary's
//! `probe` (a TerminalGuard, an input thread like the UI's, then `run_pager` or
//! `copy_to_clipboard`), and the pager is a small script that records what it was
//! given and what the terminal looked like while it ran. Every step waits for a file
//! or a state, never for a fixed time.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode};
use send_once::ui::terminal::{
    TerminalGuard, copy_to_clipboard, input_turn, osc52, pager_commands, run_pager,
};

use crate::harness;
use crate::harness::tmux::Term;

const TEXT: &str = "Draft 4 · revision 2\n\n{\n  \"body\": |\n    │ Dear Ana,\n}\n";

/// How long a step of the probe may take: the pager starting, the probe ending.
fn patience() -> Duration {
    harness::patience(10)
}

fn wait_for(path: &Path) {
    harness::wait_for_file(path, patience());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A terminal running the probe for `scenario`; dropping it kills its tmux server.
struct ProbeTerm {
    term: Term,
}

impl ProbeTerm {
    fn start(dir: &Path, scenario: &str, conf: &[&str], env: &[&str]) -> ProbeTerm {
        let exe = std::env::current_exe().unwrap().display().to_string();
        let probe = harness::test_name(module_path!(), "probe");
        let mut command = vec![
            "env".to_owned(),
            "-u".to_owned(),
            "PAGER".to_owned(),
            format!("SEND_ONCE_PAGER_PROBE={scenario}"),
            format!("SEND_ONCE_PAGER_OUT={}", dir.display()),
            format!("SEND_ONCE_PAGER_TMUX={}", tmux_path()),
        ];
        command.extend(env.iter().map(|v| v.to_string()));
        command.extend([exe, "--exact".to_owned(), probe]);
        command.extend(["--ignored".to_owned(), "--nocapture".to_owned()]);
        ProbeTerm {
            term: Term::start(dir, scenario, (100, 30), conf, &command),
        }
    }

    /// The process id of the program the pane runs (the probe).
    fn pane_pid(&self) -> String {
        self.term.display("#{pane_pid}")
    }

    /// Waits until a process named `name` runs in the probe's process group.
    fn wait_for_process(&self, name: &str) {
        let group = self.pane_pid();
        let start = Instant::now();
        while !processes_in_group(&group).iter().any(|comm| comm == name) {
            assert!(start.elapsed() < patience(), "{name} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn press(&self, keys: &[&str]) {
        self.term.press(keys);
    }

    /// Waits for the probe to end, pressing `z` (which it waits for) while it runs,
    /// and gives its exit status and the screen.
    fn wait_exit(&self) -> (String, String) {
        let start = Instant::now();
        loop {
            let state = self.term.display("#{pane_dead}:#{pane_dead_status}");
            let screen = self.term.screen();
            if let Some(status) = state.strip_prefix("1:")
                && !status.is_empty()
            {
                return (status.to_owned(), screen);
            }
            // The probe's harness said how it ended. Under load tmux can take seconds
            // to reap the exited probe (it shows as a zombie meanwhile), so the pane's
            // own end is not waited for once its last words are on the screen.
            if screen.contains("test result: ok. 1 passed") {
                return ("0".to_owned(), screen);
            }
            if screen.contains("test result: FAILED") {
                return ("101".to_owned(), screen);
            }
            assert!(
                start.elapsed() < patience(),
                "the probe did not end:\n{screen}"
            );
            self.press(&["z"]);
            // tmux can miss the SIGCHLD of a pane's program that ends as its terminal
            // closes (tmux/tmux#311); a SIGCHLD to the server makes it reap.
            let server = self.term.display("#{pid}");
            if !server.is_empty() {
                let _ = Command::new("kill").args(["-CHLD", &server]).status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The command names of the processes in process group `group`, from /proc.
fn processes_in_group(group: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter_map(|stat| {
            // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
            let (head, rest) = stat.rsplit_once(')')?;
            let comm = head.split_once('(')?.1;
            let pgrp = rest.split_whitespace().nth(2)?;
            (pgrp == group).then(|| comm.to_owned())
        })
        .collect()
}

fn tmux_path() -> String {
    let out = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A pager script at `path` that records its arguments, the text, the file's mode,
/// the terminal's modes and tmux's view of the screen, says it is ready, then reads a
/// line from the terminal (as a pager waits for keys).
fn write_pager(path: &Path, out: &Path, wait_for_line: bool) {
    let out = out.display();
    let script = format!(
        "#!/bin/sh\n\
         for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{out}/args.tmp' && /bin/mv '{out}/args.tmp' '{out}/args'\n\
         for last in \"$@\"; do :; done\n\
         /bin/cat \"$last\" > '{out}/content'\n\
         /usr/bin/stat -c %a \"$last\" > '{out}/mode'\n\
         /bin/stty -a > '{out}/stty'\n\
         {tmux} display -p '#{{alternate_on}} #{{mouse_any_flag}}' > '{out}/screen'\n\
         {read}\n",
        tmux = tmux_path(),
        read = if wait_for_line {
            // Key by key, as less reads. The keys arrive while the pager is busy (until
            // `go`), as they do while less draws: they wait in the terminal for whoever
            // reads first, and only the pager may.
            format!(
                "/bin/stty -icanon min 1; /usr/bin/touch '{out}/ready'; \
                 i=0; until [ -e '{out}/go' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; /bin/sleep 0.01; done; exec /usr/bin/head -c 19 > '{out}/line'"
            )
        } else {
            String::new()
        }
    );
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn interrupt_handler() -> libc::sighandler_t {
    on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t
}

/// Run by the tests below, inside tmux; on its own it has nothing to do.
#[test]
#[ignore = "the tests below run it in a terminal"]
fn probe() {
    let (Ok(scenario), Some(out)) = (
        std::env::var("SEND_ONCE_PAGER_PROBE"),
        std::env::var_os("SEND_ONCE_PAGER_OUT").map(PathBuf::from),
    ) else {
        eprintln!("note: the probe runs only inside the pager tests' terminal");
        return;
    };
    // The UI's signal handler stands in for the one tokio installs.
    unsafe { libc::signal(libc::SIGINT, interrupt_handler()) };
    let mut guard = TerminalGuard::enter().expect("a terminal");
    let seen = Arc::new(Mutex::new(Vec::<char>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let input = {
        let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let _turn = input_turn();
                if event::poll(Duration::from_millis(50)).unwrap_or(false)
                    && let Ok(Event::Key(key)) = event::read()
                    && let KeyCode::Char(c) = key.code
                {
                    seen.lock().unwrap().push(c);
                }
            }
        })
    };
    let result = match scenario.as_str() {
        "clipboard" => copy_to_clipboard(&mut guard, "0589ad63c6080ed5 · draft 42"),
        _ => run_pager(&mut guard, TEXT),
    };
    // By its full path: a scenario runs with a PATH of fake pagers only.
    let tmux = Command::new(std::env::var("SEND_ONCE_PAGER_TMUX").unwrap())
        .args(["display", "-p", "#{alternate_on} #{mouse_any_flag}"])
        .output()
        .unwrap();
    let mut handler: libc::sigaction = unsafe { std::mem::zeroed() };
    unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut handler) };
    let after = format!(
        "result={result:?}\nraw={}\nscreen={}\nkeys during={:?}\ninterrupted={}\nhandler back={}\n",
        crossterm::terminal::is_raw_mode_enabled().unwrap(),
        String::from_utf8_lossy(&tmux.stdout).trim(),
        seen.lock().unwrap().clone(),
        INTERRUPTED.load(Ordering::SeqCst),
        handler.sa_sigaction == interrupt_handler(),
    );
    std::fs::write(out.join("after.tmp"), after).unwrap();
    std::fs::rename(out.join("after.tmp"), out.join("after")).unwrap();
    // The input thread reads again: the test presses `z` once it has read `after`.
    let start = Instant::now();
    while !seen.lock().unwrap().contains(&'z') {
        assert!(
            start.elapsed() < patience(),
            "the input thread did not read again"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    input.join().unwrap();
    drop(guard);
}

/// Runs the probe for `scenario` and gives back what it wrote in `after`.
fn run_probe(term: &ProbeTerm, dir: &Path) -> String {
    let after_path = dir.join("after");
    let start = Instant::now();
    while !after_path.exists() {
        if start.elapsed() > patience() {
            let pane = term.pane_pid();
            let ps = Command::new("ps")
                .args(["-o", "pid,pgid,tpgid,stat,wchan:20,args", "-g", &pane])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let stty = Command::new("sh")
                .args(["-c", &format!("stty -a < /proc/{pane}/fd/0")])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            panic!(
                "{} did not appear\nprocesses:\n{ps}\nterminal:\n{stty}\nscreen:\n{}",
                after_path.display(),
                term.term.screen()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = read(&dir.join("after"));
    let (status, screen) = term.wait_exit();
    assert_eq!(status, "0", "the probe failed:\n{screen}\n{after}");
    after
}

#[test]
fn the_pager_gets_the_text_and_the_terminal_and_the_ui_gets_both_back() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("my pager.sh");
    write_pager(&script, dir.path(), true);
    let pager = format!(
        "PAGER={} --from-test",
        shell_words::quote(&script.display().to_string())
    );
    let term = ProbeTerm::start(dir.path(), "pager", &[], &[&pager]);
    wait_for(&dir.path().join("ready"));
    // Typed while the pager waits: it is the pager's, not the UI's input thread's.
    term.press(&["typed for the pager"]);
    std::fs::write(dir.path().join("go"), "").unwrap();
    let after = run_probe(&term, dir.path());

    let args = read(&dir.path().join("args"));
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args.len(), 2, "{args:?}");
    assert_eq!(args[0], "--from-test");
    assert_eq!(read(&dir.path().join("content")), TEXT);
    assert_eq!(
        read(&dir.path().join("mode")).trim(),
        "600",
        "the text file is private"
    );
    assert!(
        !Path::new(args[1]).exists(),
        "the text file is removed after"
    );
    let stty = read(&dir.path().join("stty"));
    assert!(
        stty.split_whitespace().any(|w| w == "icanon")
            && stty.split_whitespace().any(|w| w == "echo"),
        "the pager runs in cooked mode:\n{stty}"
    );
    assert_eq!(
        read(&dir.path().join("screen")).trim(),
        "0 0",
        "the pager has the main screen, no mouse capture"
    );
    assert_eq!(read(&dir.path().join("line")), "typed for the pager");
    assert_eq!(
        after,
        "result=Ok(())\nraw=true\nscreen=1 1\nkeys during=[]\ninterrupted=false\nhandler back=true\n"
    );
}

#[test]
fn ctrl_c_in_the_pager_is_the_pagers_and_the_ui_keeps_its_handler() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("pager.sh");
    write_pager(&script, dir.path(), true);
    let pager = format!("PAGER={}", script.display());
    let term = ProbeTerm::start(dir.path(), "interrupt", &[], &[&pager]);
    wait_for(&dir.path().join("ready"));
    std::fs::write(dir.path().join("go"), "").unwrap();
    // Pressed once the reader has replaced the script's shell. A Ctrl-C that lands
    // while dash is starting a command is lost: dash catches SIGINT in a script and
    // its vforked child, not yet exec'd, drops it (so the reader lives on and dash
    // waits for it). A real pager is exec'd by the UI itself and has no such window.
    term.wait_for_process("head");
    term.press(&["C-c"]);
    let after = run_probe(&term, dir.path());
    // The script had the default action back and died of it; the UI did not see it.
    assert!(
        after.starts_with(&format!(
            "result=Err(\"the pager `{}` ended with signal: 2 (SIGINT)\")\nraw=true\nscreen=1 1\n",
            script.display()
        )),
        "{after}"
    );
    assert!(
        after.ends_with("interrupted=false\nhandler back=true\n"),
        "{after}"
    );
}

#[test]
fn without_pager_it_is_less_dash_r_and_more_when_less_is_missing() {
    require_tmux!();
    for (names, expected) in [(&["less", "more"][..], "less"), (&["more"][..], "more")] {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for name in names {
            let script = bin.join(name);
            write_pager(&script, dir.path(), false);
            // Each records its own name first.
            let text = read(&script).replacen(
                "for a in",
                &format!("echo {name} > '{}/name'\nfor a in", dir.path().display()),
                1,
            );
            std::fs::write(&script, text).unwrap();
        }
        let path = format!("PATH={}", bin.display());
        let term = ProbeTerm::start(dir.path(), "default", &[], &[&path]);
        let after = run_probe(&term, dir.path());
        assert!(
            after.starts_with("result=Ok(())\nraw=true\nscreen=1 1\n"),
            "{after}"
        );
        assert_eq!(read(&dir.path().join("name")).trim(), expected);
        let args = read(&dir.path().join("args"));
        let args: Vec<&str> = args.lines().collect();
        if expected == "less" {
            assert_eq!(args[0], "-R", "{args:?}");
        }
        assert_eq!(
            args.len(),
            if expected == "less" { 2 } else { 1 },
            "{args:?}"
        );
        assert_eq!(read(&dir.path().join("content")), TEXT);
    }
}

#[test]
fn a_pager_that_cannot_start_says_why_and_the_screen_comes_back() {
    require_tmux!();
    for (pager, expected) in [
        (
            "/nonexistent/pager -x",
            "result=Err(\"cannot start a pager: `/nonexistent/pager -x` not found; set $PAGER\")",
        ),
        (
            "less 'unclosed",
            "result=Err(\"cannot read $PAGER (\\\"less 'unclosed\\\"): missing closing quote\")",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let env = format!("PAGER={pager}");
        let term = ProbeTerm::start(dir.path(), "missing", &[], &[&env]);
        let after = run_probe(&term, dir.path());
        assert_eq!(
            after,
            format!(
                "{expected}\nraw=true\nscreen=1 1\nkeys during=[]\ninterrupted=false\nhandler back=true\n"
            )
        );
    }
}

#[test]
fn copy_to_clipboard_reaches_tmux_as_osc_52() {
    assert_eq!(osc52("hi"), "\u{1b}]52;c;aGk=\u{7}");
    assert_eq!(
        osc52("é\u{1b}"),
        "\u{1b}]52;c;w6kb\u{7}",
        "the text never goes out raw"
    );
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let term = ProbeTerm::start(dir.path(), "clipboard", &["set -g set-clipboard on"], &[]);
    let after = run_probe(&term, dir.path());
    assert!(after.starts_with("result=Ok(())\n"), "{after}");
    assert_eq!(
        term.term.ok(&["show-buffer"]),
        "0589ad63c6080ed5 · draft 42"
    );
}

#[test]
fn pager_commands_split_pager_as_a_shell_would() {
    assert_eq!(
        pager_commands(Some("'/opt/my pager' -R --x")).unwrap(),
        vec![vec!["/opt/my pager", "-R", "--x"]]
    );
    let default = vec![vec!["less", "-R"], vec!["more"]];
    assert_eq!(pager_commands(None).unwrap(), default);
    assert_eq!(pager_commands(Some("  ")).unwrap(), default);
}
