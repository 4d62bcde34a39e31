//! The terminal given back, end to end: after `q`, an error, a panic or a signal, the
//! shell the UI ran in is usable again (main screen, earlier output there, cursor
//! shown, mouse reporting off, the same `stty` settings), and a terminal too small for
//! the views says so and redraws when it grows. Keys on the too-small screen deciding
//! nothing are in `faults.rs`; the same in the screen's model in `tests/ui/guard.rs`.

use std::process::Command;

use crate::harness::bin;
use crate::harness::tmux::Term;

use super::shift::{first_line, submit, tempdir, tui_command};

// ---------------------------------------------------------------------------------
// 1. The terminal is given back: after a quit, an error and a panic, the shell is
// usable — main screen, earlier output still there, line editing and echo on, mouse
// reporting off, cursor shown.

/// A shell in tmux with the binary in $B and a one-draft ledger in $L, so that command
/// lines stay short enough to fit on one screen line and the program's output lines
/// are told apart from the typed ones by how they start.
fn shell(tag: &str) -> (tempfile::TempDir, Term) {
    let (dir, ledger) = tempdir();
    submit(&ledger, dir.path(), "ann@example.com", r#"{"text":"hi"}"#);
    let shell = vec![
        "env".to_owned(),
        "-u".into(),
        "NO_COLOR".into(),
        "-u".into(),
        "SEND_ONCE_TUI_FAULT".into(),
        "-u".into(),
        "RUST_LIB_BACKTRACE".into(),
        // A panic report short enough to stay on the screen.
        "RUST_BACKTRACE=0".into(),
        format!("B={}", bin().display()),
        format!("L={}", ledger.display()),
        "PS1=e2e$ ".into(),
        "HISTFILE=/dev/null".into(),
        "bash".into(),
        "--norc".into(),
        "--noprofile".into(),
    ];
    let term = Term::start(dir.path(), tag, (100, 30), &[], &shell);
    term.wait_for("e2e$");
    (dir, term)
}

/// Runs the UI inside the shell (ended by `q`, or by itself with a fault), checks the
/// shell is usable afterwards, and returns the UI's exit status and the screen.
fn run_in_shell(term: &Term, fault: Option<&str>) -> (i32, String) {
    term.type_text("echo BEFORE-$((1+1))");
    term.press(&["Enter"]);
    term.wait_for("\nBEFORE-2");
    let env = fault.map_or(String::new(), |f| format!("SEND_ONCE_TUI_FAULT={f} "));
    term.type_text(&format!(
        "env {env}\"$B\" tui \"$L\" --by alice; echo EXIT:$?"
    ));
    term.press(&["Enter"]);
    if fault.is_none() {
        term.wait_for("[1 Approvals (1)]");
        assert_eq!(
            term.display("#{alternate_on}"),
            "1",
            "the UI uses the alternate screen"
        );
        term.press(&["q"]);
    }
    term.wait_until("EXIT:N", |s| s.lines().any(|l| l.starts_with("EXIT:")));

    term.type_text("echo READY-$((40+2))");
    term.press(&["Enter"]);
    let screen = term.wait_for("\nREADY-42");
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert!(
        lines.contains(&"BEFORE-2"),
        "the output from before the UI is gone (still on the alternate screen?):\n{screen}"
    );
    // Each line the shell wrote after the UI must be whole: a line with something of
    // an earlier one still after it means the cursor was moved back over old output.
    let exit = lines
        .iter()
        .find(|l| l.starts_with("EXIT:"))
        .expect("the exit line");
    let status: i32 = exit["EXIT:".len()..].parse().unwrap_or_else(|_| {
        panic!("the shell wrote its next line over earlier output: {exit:?}\n{screen}")
    });
    assert!(
        lines.contains(&"e2e$ echo READY-$((40+2))"),
        "the typed command line is not shown whole:\n{screen}"
    );
    assert!(
        lines.contains(&"READY-42"),
        "the echo's output is not whole:\n{screen}"
    );
    assert_eq!(
        term.display(
            "#{alternate_on} #{mouse_standard_flag}#{mouse_button_flag}#{mouse_any_flag}#{mouse_sgr_flag} #{cursor_flag}"
        ),
        "0 0000 1",
        "alternate screen, mouse reporting, cursor after the UI ended:\n{screen}"
    );

    // Raw mode left on would show as -icanon -echo here.
    term.type_text(r"echo STTY:$(stty -a | grep -o ' icanon\| echo ' | tr -d ' ' | tr '\n' ,)");
    term.press(&["Enter"]);
    let after = term.wait_until("the stty answer", |s| {
        s.lines().any(|l| l.starts_with("STTY:"))
    });
    let line = after.lines().find(|l| l.starts_with("STTY:")).unwrap();
    assert_eq!(
        line.trim_end(),
        "STTY:icanon,echo,",
        "the terminal was left in raw mode:\n{after}"
    );
    (status, screen)
}

#[test]
fn the_terminal_is_restored_after_quit() {
    require_tmux!();
    let (_dir, term) = shell("quit");
    let (status, _) = run_in_shell(&term, None);
    assert_eq!(status, 0, "q exits 0");
}

#[test]
fn the_terminal_is_restored_after_an_error() {
    require_tmux!();
    let (_dir, term) = shell("error");
    let (status, screen) = run_in_shell(&term, Some("error"));
    assert_ne!(status, 0, "an error exits non-zero");
    assert!(
        screen.contains("send-once: SEND_ONCE_TUI_FAULT=error: an error on purpose"),
        "the error is not shown:\n{screen}"
    );
}

#[test]
fn the_terminal_is_restored_after_a_panic() {
    require_tmux!();
    let (_dir, term) = shell("panic");
    let (status, screen) = run_in_shell(&term, Some("panic"));
    assert_eq!(status, 101, "a panic exits 101");
    let lines: Vec<&str> = screen.lines().collect();
    let message = lines
        .iter()
        .position(|l| l.contains("a panic on purpose"))
        .unwrap_or_else(|| panic!("the panic message is not shown:\n{screen}"));
    let exit = lines.iter().position(|l| l.starts_with("EXIT:")).unwrap();
    assert!(
        message < exit && !lines[message].contains("e2e$"),
        "the panic report was overwritten:\n{screen}"
    );
}

// ---------------------------------------------------------------------------------
// 2. Signals give the terminal back too (finding D10).

/// Runs `tui --demo` in a shell in tmux, sends it `signal` once every view is filled,
/// and checks what the shell gets back: the exit status 128 + the signal, the main
/// screen with the cursor shown and mouse reporting off, the same stty settings as
/// before, and no demo directory left.
fn a_signal_restores_the_terminal(signal: &str, number: i32) {
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let shell = vec![
        "env".to_owned(),
        "-u".into(),
        "NO_COLOR".into(),
        "-u".into(),
        "SEND_ONCE_TUI_FAULT".into(),
        format!("B={}", bin().display()),
        format!("TMPDIR={}", tmp.display()),
        "PS1=e2e$ ".into(),
        "HISTFILE=/dev/null".into(),
        "bash".into(),
        "--norc".into(),
        "--noprofile".into(),
    ];
    let term = Term::start(dir, signal, (100, 30), &[], &shell);
    term.wait_for_words("e2e$");
    // `exec` gives the UI the pid written, so the signal goes to it alone.
    term.type_text(
        "stty -g > before; sh -c 'echo $$ > tui.pid; exec \"$B\" tui --demo --by t'; s=$?; stty -g > after; echo EXIT:$s",
    );
    term.press(&["Enter"]);
    term.wait_for_words("Unknown sends (8)");
    let flags = "#{alternate_on} #{cursor_flag} #{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_sgr_flag}";
    assert_eq!(
        term.display(flags),
        "1 0 1001",
        "while the UI runs: alternate screen, cursor hidden, mouse reporting on"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        1,
        "the demo's directory"
    );

    let pid = std::fs::read_to_string(dir.join("tui.pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-s", signal, pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());

    let screen = term.wait_until("EXIT:", |s| s.lines().any(|l| l.starts_with("EXIT:")));
    let exit = screen.lines().find(|l| l.starts_with("EXIT:")).unwrap();
    assert_eq!(
        exit.trim_end(),
        format!("EXIT:{}", 128 + number),
        "{screen}"
    );
    assert_eq!(
        term.display(flags),
        "0 1 0000",
        "after SIG{signal}: main screen, cursor shown, mouse reporting off:\n{screen}"
    );
    let before = std::fs::read_to_string(dir.join("before")).unwrap();
    let after = std::fs::read_to_string(dir.join("after")).unwrap();
    assert_eq!(
        after, before,
        "stty settings after SIG{signal} (raw mode left on?)"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "SIG{signal} left the demo's directory behind"
    );
}

#[test]
fn sigterm_restores_the_terminal_and_exits_143() {
    require_tmux!();
    a_signal_restores_the_terminal("TERM", libc::SIGTERM);
}

#[test]
fn sighup_restores_the_terminal_and_exits_129() {
    require_tmux!();
    a_signal_restores_the_terminal("HUP", libc::SIGHUP);
}

#[test]
fn sigint_restores_the_terminal_and_exits_130() {
    require_tmux!();
    a_signal_restores_the_terminal("INT", libc::SIGINT);
}

#[test]
fn sigquit_restores_the_terminal_and_exits_131() {
    require_tmux!();
    a_signal_restores_the_terminal("QUIT", libc::SIGQUIT);
}

#[test]
fn sigusr1_restores_the_terminal_and_exits_138() {
    require_tmux!();
    a_signal_restores_the_terminal("USR1", libc::SIGUSR1);
}

// ---------------------------------------------------------------------------------
// 3. A terminal too small says so instead of drawing a broken screen, and the views
// come back when it grows.

#[test]
fn a_too_small_terminal_says_so_and_redraws_when_resized() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    submit(&ledger, dir.path(), "ann@example.com", r#"{"text":"hi"}"#);
    let term = Term::start(
        dir.path(),
        "small",
        (50, 12),
        &[],
        &tui_command(&ledger, &["--by", "alice"]),
    );
    let screen = term.wait_for("needs at least");
    assert!(screen.contains("50×12"), "the size is not named:\n{screen}");

    term.ok(&["resize-window", "-t", "e2e", "-x", "100", "-y", "30"]);
    let screen = term.wait_for("ann@example.com");
    assert!(
        !screen.contains("needs at least") && first_line(&screen).contains("[1 Approvals"),
        "not redrawn after growing:\n{screen}"
    );

    term.ok(&["resize-window", "-t", "e2e", "-x", "60", "-y", "20"]);
    let screen = term.wait_for("needs at least");
    assert!(
        screen.contains("60×20"),
        "the new size is not named:\n{screen}"
    );

    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0, "q quits from the too-small screen");
}
