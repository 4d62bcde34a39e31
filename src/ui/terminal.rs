//! The terminal, always given back: a guard restores it on every way out (quit, an
//! error), and a panic hook restores it before the panic message is printed.

use std::io::{Stdout, Write, stdout};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};

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
