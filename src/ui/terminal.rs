//! The terminal, always given back: a guard restores it on every way out (quit, an
//! error), and a panic hook restores it before the panic message is printed. It is
//! lent to a pager and taken back, and asked to copy text to the clipboard.

use std::io::{Stdout, Write, stdout};
use std::mem::ManuallyDrop;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Owns the terminal while the UI runs; dropping it restores the terminal.
pub struct TerminalGuard {
    /// Never dropped: ratatui's drop shows the cursor again, which `restore` has done,
    /// and when the terminal is gone (hung up) it panics saying it could not, which
    /// aborts the process before the demo's directory is removed.
    pub terminal: ManuallyDrop<Tui>,
}

impl TerminalGuard {
    pub fn enter() -> std::io::Result<TerminalGuard> {
        install_panic_hook();
        RESTORED.store(false, Ordering::SeqCst);
        enable_raw_mode()?;
        let entered = execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(mut terminal) => {
                terminal.hide_cursor()?;
                Ok(TerminalGuard {
                    terminal: ManuallyDrop::new(terminal),
                })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Whether the terminal has been given back since the UI took it.
static RESTORED: AtomicBool = AtomicBool::new(true);

/// Gives the terminal back, once: after a panic the hook restores it, then the guard's
/// drop runs while unwinding; a second "leave the alternate screen" would move the
/// cursor back over the panic report. It never panics (a failure to restore is
/// reported on stderr, where the shell will show it).
pub fn restore() {
    if RESTORED.swap(true, Ordering::SeqCst) {
        return;
    }
    let raw = disable_raw_mode();
    let screen = execute!(
        stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    if let Err(e) = raw.and(screen) {
        // Not eprintln!, which panics when stderr is gone too (the terminal hung up).
        let _ = writeln!(
            std::io::stderr(),
            "send-once: could not restore the terminal: {e}; try `reset`"
        );
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Who may read the terminal's input: the UI's input thread, or a program the UI ran
/// in its place (the pager). crossterm's `poll` reads the bytes it finds, so a poll
/// left running while the pager waits for a key would take the key from it.
struct InputGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

struct GateState {
    paused: bool,
    reading: bool,
}

static INPUT: InputGate = InputGate {
    state: Mutex::new(GateState {
        paused: false,
        reading: false,
    }),
    changed: Condvar::new(),
};

fn gate_state() -> MutexGuard<'static, GateState> {
    INPUT.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The input thread's turn to read the terminal: hold it across one
/// `event::poll` and the `event::read` after it. It waits while a pager has the
/// terminal.
pub struct InputTurn(());

pub fn input_turn() -> InputTurn {
    let mut state = gate_state();
    while state.paused {
        state = INPUT
            .changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
    state.reading = true;
    InputTurn(())
}

impl Drop for InputTurn {
    fn drop(&mut self) {
        gate_state().reading = false;
        INPUT.changed.notify_all();
    }
}

/// The terminal's input kept from the input thread, until dropped.
struct InputPaused(());

fn pause_input() -> InputPaused {
    let mut state = gate_state();
    state.paused = true;
    while state.reading {
        state = INPUT
            .changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
    InputPaused(())
}

impl Drop for InputPaused {
    fn drop(&mut self) {
        gate_state().paused = false;
        INPUT.changed.notify_all();
    }
}

/// The commands to try as the pager, in order, for the value of `$PAGER`: that
/// command alone when it is set (split as a shell would, without one), else `less -R`
/// and, when less is not installed, `more`.
pub fn pager_commands(pager: Option<&str>) -> Result<Vec<Vec<String>>, String> {
    match pager.map(str::trim).filter(|p| !p.is_empty()) {
        Some(pager) => {
            let argv = shell_words::split(pager)
                .map_err(|e| format!("cannot read $PAGER ({pager:?}): {e}"))?;
            if argv.is_empty() {
                return Err(format!("cannot read $PAGER ({pager:?}): no command in it"));
            }
            Ok(vec![argv])
        }
        None => Ok(vec![
            vec!["less".to_owned(), "-R".to_owned()],
            vec!["more".to_owned()],
        ]),
    }
}

/// Shows `text` in `$PAGER` (see [`pager_commands`]): the terminal is given to the
/// pager (cooked mode, the main screen, no mouse capture, the UI's input thread
/// paused) and taken back when it exits, redrawn in full on the next draw. The text
/// goes to a temporary file only this user can read, removed afterwards. An error
/// says why the pager could not run; the screen is restored all the same.
///
/// It blocks until the pager exits: from the UI's runtime, call it inside
/// `tokio::task::block_in_place`.
pub fn run_pager(guard: &mut TerminalGuard, text: &str) -> Result<(), String> {
    let commands = pager_commands(std::env::var("PAGER").ok().as_deref())?;
    let mut file = tempfile::Builder::new()
        .prefix("send-once-")
        .suffix(".txt")
        .tempfile()
        .map_err(|e| format!("cannot write the text for the pager: {e}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write the text for the pager: {e}"))?;
    lend(guard, "pager", || run_first(&commands, file.path(), &PAGER))
}

/// A program the terminal is lent to, as messages name it.
pub(crate) struct Lent {
    /// "pager", "editor".
    pub who: &'static str,
    /// "a pager", "an editor".
    pub a_who: &'static str,
    /// What to set to choose another: "$PAGER".
    pub set: &'static str,
}

const PAGER: Lent = Lent {
    who: "pager",
    a_who: "a pager",
    set: "$PAGER",
};

/// Gives the terminal to `run` (cooked mode, the main screen, no mouse capture, the
/// UI's input thread paused) and takes it back when it returns, redrawn in full on
/// the next draw; `who` names the program in what goes wrong. The screen is taken
/// back however `run` ends.
pub(crate) fn lend<T>(
    guard: &mut TerminalGuard,
    who: &str,
    run: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    let paused = pause_input();
    let suspended = suspend(guard);
    let ran = match &suspended {
        Ok(()) => run(),
        Err(e) => Err(format!("cannot give the terminal to the {who}: {e}")),
    };
    let resumed = resume(guard);
    drop(paused);
    let value = ran?;
    resumed.map_err(|e| format!("cannot take the terminal back from the {who}: {e}"))?;
    Ok(value)
}

fn suspend(guard: &mut TerminalGuard) -> std::io::Result<()> {
    guard.terminal.backend_mut().flush()?;
    // The guard's restore has nothing to undo while the pager has the terminal.
    RESTORED.store(true, Ordering::SeqCst);
    disable_raw_mode()?;
    execute!(
        stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    )
}

fn resume(guard: &mut TerminalGuard) -> std::io::Result<()> {
    RESTORED.store(false, Ordering::SeqCst);
    enable_raw_mode()?;
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    guard.terminal.hide_cursor()?;
    guard.terminal.clear()
}

/// Why none of the commands [`try_first`] was given ran to a good end.
pub(crate) enum RunFailed {
    /// None could start: not one of them was found, each as it was given.
    NotFound(Vec<Vec<String>>),
    /// One started and failed, or could not start for another reason: why.
    Other(String),
}

/// Runs the first of `commands` that can start, with `file` as its last argument,
/// and waits for it, as [`try_first`] does; what went wrong as a message.
pub(crate) fn run_first(
    commands: &[Vec<String>],
    file: &std::path::Path,
    lent: &Lent,
) -> Result<(), String> {
    try_first(commands, file, lent).map_err(|failed| match failed {
        RunFailed::Other(why) => why,
        RunFailed::NotFound(missing) => format!(
            "cannot start {}: {} not found; set {}",
            lent.a_who,
            missing
                .iter()
                .map(|m| format!("`{}`", crate::text::visible_inline(&shell_words::join(m))))
                .collect::<Vec<_>>()
                .join(" nor "),
            lent.set
        ),
    })
}

/// Runs the first of `commands` that can start, with `file` as its last argument,
/// and waits for it. The UI ignores the terminal's interrupt and quit keys meanwhile
/// (as `system(3)` does): Ctrl-C in less is for less, not a request to end the UI.
pub(crate) fn try_first(
    commands: &[Vec<String>],
    file: &std::path::Path,
    lent: &Lent,
) -> Result<(), RunFailed> {
    let _ignoring = IgnoreInterrupts::new();
    let mut missing = Vec::new();
    for argv in commands {
        let Some((program, args)) = argv.split_first() else {
            continue;
        };
        let mut command = Command::new(program);
        command.args(args).arg(file);
        // SAFETY: `signal` is async-signal-safe; between fork and exec the pager
        // gets back the default actions the UI set aside.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        let shown = crate::text::visible_inline(&shell_words::join(argv)).into_owned();
        match command.status() {
            Ok(status) if status.success() => return Ok(()),
            Ok(status) => {
                return Err(RunFailed::Other(format!(
                    "the {} `{shown}` ended with {status}",
                    lent.who
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(argv.clone()),
            Err(e) => {
                return Err(RunFailed::Other(format!(
                    "cannot start the {} `{shown}`: {e}",
                    lent.who
                )));
            }
        }
    }
    Err(RunFailed::NotFound(missing))
}

/// SIGINT and SIGQUIT ignored in this process until dropped, their previous actions
/// (the UI's handlers) put back after.
struct IgnoreInterrupts {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

impl IgnoreInterrupts {
    fn new() -> IgnoreInterrupts {
        let mut saved = Vec::new();
        for signal in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: plain sigaction calls on zeroed structs; the old action is kept
            // only when the call succeeded.
            unsafe {
                let mut ignore: libc::sigaction = std::mem::zeroed();
                ignore.sa_sigaction = libc::SIG_IGN;
                libc::sigemptyset(&mut ignore.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &ignore, &mut old) == 0 {
                    saved.push((signal, old));
                }
            }
        }
        IgnoreInterrupts { saved }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        for (signal, old) in &self.saved {
            // SAFETY: puts back the action sigaction gave us.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}

/// The OSC 52 sequence that asks the terminal to put `text` on the system clipboard:
/// `ESC ] 52 ; c ; <base64 of text> BEL`. It works over ssh, since it is only output.
/// It is not wrapped for tmux: tmux takes a plain OSC 52 into its paste buffer and
/// passes it on to the outer terminal when `set-clipboard` is `on` (its default,
/// `external`, ignores it); the DCS passthrough wrapping would also need
/// `allow-passthrough`, and would skip tmux's own buffer.
pub fn osc52(text: &str) -> String {
    use base64::Engine as _;
    format!(
        "\u{1b}]52;c;{}\u{7}",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// Puts `text` on the clipboard of the terminal the UI runs in (see [`osc52`]). The
/// terminal says nothing back, so success means the request was written.
pub fn copy_to_clipboard(guard: &mut TerminalGuard, text: &str) -> Result<(), String> {
    let backend = guard.terminal.backend_mut();
    backend
        .write_all(osc52(text).as_bytes())
        .and_then(|()| backend.flush())
        .map_err(|e| format!("cannot write to the terminal: {e}"))
}

/// Whether the terminal on standard input has hung up (its other end is gone). A
/// poll for no events still reports POLLHUP and POLLERR, and takes no input.
pub fn hung_up() -> bool {
    fd_hung_up(libc::STDIN_FILENO)
}

fn fd_hung_up(fd: libc::c_int) -> bool {
    let mut fds = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout.
    let ready = unsafe { libc::poll(&mut fds, 1, 0) };
    ready > 0 && fds.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

#[cfg(test)]
mod tests {
    use super::fd_hung_up;

    /// A terminal whose other end closed reads as hung up; one still open does not.
    #[test]
    fn a_pty_whose_master_closed_has_hung_up() {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty fills two descriptors; the name, termios and size are unused.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(opened, 0, "openpty");
        assert!(!fd_hung_up(slave), "an open terminal");
        // SAFETY: closing the descriptors openpty gave.
        unsafe { libc::close(master) };
        assert!(fd_hung_up(slave), "its other end is gone");
        unsafe { libc::close(slave) };
    }
}
